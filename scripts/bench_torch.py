#!/usr/bin/env python3
"""The cases of gpukit/cmd/benchtorch in PyTorch (CPU, float32), one line
per case: name<TAB>median seconds. Each case runs once to warm up, then
REPS times. The training steps (mlp_adam_step, gpt_step) copy back the
parameters they had at setup before each timed run, untimed, so that
every timed step starts from the same state (see
gpukit/cmd/benchtorch/main.go). With --serve, it sets up the one case
named by --only, warms it up, prints "ready" and that first call's
seconds ("ready 0.0123"), then runs it once per line of standard input
and prints that run's seconds (scripts/bench-torch.sh alternates it with
gpukit's that way).

    python3 scripts/bench_torch.py [--threads 2] [--reps 7] [--only a,b] [--serve]
"""
import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def restorable(run, module):
    """run, with a reset that copies back module's parameters as they are now."""
    saved = [p.detach().clone() for p in module.parameters()]

    def reset():
        with torch.no_grad():
            for p, s in zip(module.parameters(), saved):
                p.copy_(s)
    run.reset = reset
    return run


def cases():
    randn = lambda *s: torch.randn(*s)
    param = lambda *s: torch.randn(*s, requires_grad=True)

    def matmul():
        a, b = randn(1024, 1024), randn(1024, 1024)
        return lambda: a @ b

    def add():
        a, b = randn(4096, 4096), randn(4096, 4096)
        return lambda: a + b

    def adam():
        # one Adam step on a 4096×4096 parameter whose gradient is set
        params = torch.nn.ParameterList([torch.nn.Parameter(randn(4096, 4096))])
        params[0].grad = randn(4096, 4096)
        opt = torch.optim.Adam(params.parameters(), lr=1e-3)
        return restorable(lambda: opt.step(), params)

    def gelu_fwd():
        a = randn(4096, 4096)
        return lambda: F.gelu(a)

    def softmax():
        a = randn(4096, 4096)
        return lambda: torch.softmax(a, -1)

    def layernorm_fwd_bwd():
        x, w, b, g = param(8192, 1024), param(1024), param(1024), randn(8192, 1024)

        def run():
            F.layer_norm(x, [1024], w, b, 1e-5).backward(g)
            x.grad = w.grad = b.grad = None
        return run

    def gelu_fwd_bwd():
        x, g = param(8192, 1024), randn(8192, 1024)

        def run():
            F.gelu(x).backward(g)
            x.grad = None
        return run

    def cross_entropy_fwd_bwd():
        x, t = param(8192, 1000), torch.randint(0, 1000, (8192,))

        def run():
            F.cross_entropy(x, t).backward()
            x.grad = None
        return run

    def mlp_adam_step():
        m = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024))
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        x, target = randn(512, 1024), randn(512, 1024)

        def run():
            F.mse_loss(m(x), target).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        return restorable(run, m)

    def gpt_step():
        # lesson 07's GPT, "big": as gpukit/cmd/benchtorch/gpt.go
        vocab, dim, heads, layers, seq, batch = 2048, 512, 8, 8, 256, 12

        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.ln_1 = torch.nn.LayerNorm(dim)
                self.attn = torch.nn.MultiheadAttention(dim, heads, batch_first=True)
                self.ln_2 = torch.nn.LayerNorm(dim)
                self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim))

            def forward(self, x, mask):
                h = self.ln_1(x)
                x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
                return x + self.mlp(self.ln_2(x))

        class GPT(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = torch.nn.Embedding(vocab, dim)
                self.blocks = torch.nn.ModuleList(Block() for _ in range(layers))
                self.ln = torch.nn.LayerNorm(dim)
                self.head = torch.nn.Linear(dim, vocab)

            def forward(self, ids, mask):
                x = self.emb(ids)
                for b in self.blocks:
                    x = b(x, mask)
                return self.head(self.ln(x))

        g = GPT()
        opt = torch.optim.Adam(g.parameters(), lr=1e-2)
        mask = torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1)
        ids = torch.randint(0, vocab, (batch, seq))
        targets = torch.randint(0, vocab, (batch * seq,))

        def run():
            F.cross_entropy(g(ids, mask).view(-1, vocab), targets).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        return restorable(run, g)

    return [matmul, add, adam, gelu_fwd, softmax, layernorm_fwd_bwd, gelu_fwd_bwd, cross_entropy_fwd_bwd, mlp_adam_step, gpt_step]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--only", default="")
    ap.add_argument("--serve", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    only = set(a.only.split(",")) if a.only else None
    for make in cases():
        if only and make.__name__ not in only:
            continue
        run = make()
        reset = getattr(run, "reset", lambda: None)
        t0 = time.perf_counter()
        run()
        first = time.perf_counter() - t0
        if a.serve:
            print(f"ready {first:.6g}", flush=True)
            for _ in sys.stdin:
                reset()
                t0 = time.perf_counter()
                run()
                print(f"{time.perf_counter() - t0:.6g}", flush=True)
            return
        ts = []
        for _ in range(a.reps):
            reset()
            t0 = time.perf_counter()
            run()
            ts.append(time.perf_counter() - t0)
        print(f"{make.__name__}\t{statistics.median(ts):.6g}", flush=True)


if __name__ == "__main__":
    main()
