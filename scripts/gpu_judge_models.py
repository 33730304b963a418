#!/usr/bin/env python3
"""The course's model steps in PyTorch, as the judge of gpukit's figures.

gpukit/cmd/gpucheck/models.go runs lesson 03's saved-tensor measurements
and lesson 07's GPT training step on a gpukit device and writes, for every
measurement point, the allocated and reserved bytes now and at the peak,
above a base taken after a warm-up. This script builds the same models
with the same shapes and dtypes in PyTorch and writes the same points in
the same format (memtrace's output lines, which gpu_judge.py compare
reads), so that the two can be compared on the same card:

    gpu_judge_models.py list
        the step names, one a line (the same as `gpucheck models -list`)

    gpu_judge_models.py run STEP OUT.jsonl [--device cuda:0] [--small]
        runs STEP and writes its lines. On a CUDA device the figures are
        torch.cuda.memory_allocated, memory_reserved, max_memory_allocated
        and max_memory_reserved; on the CPU (the tests: PyTorch without a
        GPU) every memory figure is 0 and only the shapes, the parameter
        counts and Adam's state are meaningful. --small uses the small
        shapes of gpu-check's dry run.

The models follow gpukit's modules, each written with the PyTorch op that
gpukit's documents as its equivalent: nn.Linear, nn.Embedding,
nn.LayerNorm, nn.GELU, F.cross_entropy, torch.optim.Adam with fused=True
on cuda (gpukit's Adam is one fused kernel per parameter on every device
with an Adam kernel, gpukit/optim/adam.go; foreach=False on the CPU, where
PyTorch before 2.4 has no fused Adam), torch.amp.GradScaler, checkpoint_sequential with
use_reentrant=False and early stop off (gpukit recomputes whole segments,
gpukit/checkpoint). Attention is nn.MultiheadAttention's packed projection
followed by the math of softmax(q kᵀ/√d + mask) v as gpukit's
MultiheadAttention.Attend writes it (PyTorch's own module would average
the attention weights, or take scaled_dot_product_attention's fused
kernels, which gpukit does not model). Where the two still differ, the
comparison says so: that is what the judge is for (docs/gpu/README.md
lists the differences to expect, with PyTorch's sources).

torch is imported only by run, so that list and the tests of the rest
work without it.
"""

import argparse
import contextlib
import gc
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_judge  # noqa: E402

# The statistics of a memory point (gpukit/cmd/gpucheck/models.go).
MEMORY_STATS = ("allocated", "reserved", "peak_allocated", "peak_reserved")


class Size:
    """The shapes: FULL on a card, SMALL for a dry run on the CPU
    (models.go's fullSize and smallSize)."""

    def __init__(self, batch, width, gpt, ckpt_rows):
        self.batch, self.width, self.gpt, self.ckpt_rows = batch, width, gpt, ckpt_rows


GPT_BIG = dict(vocab=2048, dim=512, heads=8, layers=8, seq=256, batch=12)
GPT_SMALL = dict(vocab=32, dim=32, heads=2, layers=2, seq=16, batch=2)
FULL = Size(2048, 512, GPT_BIG, 1024)
SMALL = Size(64, 32, GPT_SMALL, 32)

GPT_RUNS = [
    ("baseline", dict(checkpoint=False, mixed=False)),
    ("checkpointing", dict(checkpoint=True, mixed=False)),
    ("mixed", dict(checkpoint=False, mixed=True)),
    ("both", dict(checkpoint=True, mixed=True)),
]

STEP_NAMES = [
    "lesson03-autograd-saves",
    "lesson03-budget",
    "lesson03-freezing",
    "lesson03-nograd-peaks",
    "lesson07-checkpoint-segments",
] + ["lesson07-gpt-" + name for name, _ in GPT_RUNS]


class CudaMemory:
    """The figures of torch.cuda's caching allocator."""

    def __init__(self, torch, device):
        self.cuda, self.device = torch.cuda, device

    def now(self):
        c, d = self.cuda, self.device
        return (c.memory_allocated(d), c.memory_reserved(d), c.max_memory_allocated(d), c.max_memory_reserved(d))

    def reset_peak(self):
        self.cuda.reset_peak_memory_stats(self.device)

    def settle(self):
        self.cuda.synchronize(self.device)
        self.cuda.empty_cache()
        self.cuda.reset_peak_memory_stats(self.device)


class NoMemory:
    """The CPU has no allocator statistics: every figure is 0."""

    def now(self):
        return (0, 0, 0, 0)

    def reset_peak(self):
        pass

    def settle(self):
        pass


class Recorder:
    """Collects a step's points, relative to the base after warm_up."""

    def __init__(self, torch, device, memory):
        self.torch, self.device, self.memory = torch, device, memory
        self.lines = []
        self.warm_up()
        a, r, _, _ = memory.now()
        self.base = (a, r)

    def warm_up(self):
        """A tiny product and its backward, as models.go's warmUp: they take
        cuBLAS's workspaces (one per handle and stream; backward runs on
        autograd's own thread, with its own handle), which stay."""
        w = self.torch.ones(1, 1, device=self.device, requires_grad=True)
        w.matmul(w).sum().backward()
        del w
        gc.collect()
        self.memory.settle()

    def mark(self, name):
        a, r, pa, pr = self.memory.now()
        ba, br = self.base
        self.value(name, {"allocated": a - ba, "reserved": r - br, "peak_allocated": pa - ba, "peak_reserved": pr - br})

    def value(self, name, stats):
        self.lines.append({"i": len(self.lines), "name": name, "ok": True, "error": None, "offset": None, "stats": stats})

    def reset_peak(self):
        self.memory.reset_peak()


# Lesson 03: an MLP of square linear layers relu(h·W + b).

def new_mlp(torch, device, layers, width):
    ws = [torch.randn(width, width, device=device).requires_grad_() for _ in range(layers)]
    bs = [torch.zeros(width, device=device, requires_grad=True) for _ in range(layers)]
    return ws, bs


def mlp_forward(torch, m, x, after=None):
    """The lesson's forward: each intermediate goes as soon as the next
    exists (del drops the last Python reference)."""
    ws, bs = m
    h = x
    for i in range(len(ws)):
        z = h.matmul(ws[i])
        a = z + bs[i]
        del z
        nxt = torch.relu(a)
        del a
        h = nxt
        del nxt
        if after:
            after(i)
    return h


def loss_of(out):
    sq = out.pow(2)
    return sq.mean()


def l03_autograd_saves(rec, size):
    torch, dev = rec.torch, rec.device
    m = new_mlp(torch, dev, 6, size.width)
    x = torch.randn(size.batch, size.width, device=dev)
    rec.mark("weights and input")
    out = mlp_forward(torch, m, x, lambda i: rec.mark("layer %d" % (i + 1)))
    loss = loss_of(out)
    del out
    rec.mark("loss")
    rec.reset_peak()
    loss.backward()
    rec.mark("backward")
    for p in m[0] + m[1]:
        p.grad = None
    rec.mark("gradients freed")
    del loss
    with torch.no_grad():
        out = mlp_forward(torch, m, x, lambda i: rec.mark("no-grad layer %d" % (i + 1)))
        del out
    del x, m
    rec.mark("released")


def l03_budget(rec, size):
    torch, dev = rec.torch, rec.device
    m = new_mlp(torch, dev, 6, size.width)
    params = m[0] + m[1]
    for rows in (2 * size.batch, 32):
        at = lambda what: rec.mark("%d rows: %s" % (rows, what))  # noqa: E731
        x = torch.randn(rows, size.width, device=dev)
        out = mlp_forward(torch, m, x)
        at("forward")
        loss = loss_of(out)
        del out
        rec.reset_peak()
        loss.backward()
        at("backward")
        del loss
        state = []
        for p in params:
            state += [torch.zeros_like(p), torch.zeros_like(p)]  # exp_avg, exp_avg_sq
        at("adam state")
        del state
        for p in params:
            p.grad = None
        del x
        at("released")


def l03_freezing(rec, size):
    torch, dev = rec.torch, rec.device
    x = torch.randn(size.batch, size.width, device=dev)
    for name, frozen in (
        ("none", lambda i: False),
        ("first 3 of 6", lambda i: i < 3),
        ("first 5 of 6", lambda i: i < 5),
        ("last 3 of 6", lambda i: i >= 3),
    ):
        m = new_mlp(torch, dev, 6, size.width)
        for i in range(6):
            m[0][i].requires_grad_(not frozen(i))
            m[1][i].requires_grad_(not frozen(i))
        out = mlp_forward(torch, m, x)
        rec.mark(name + ": forward")
        loss = loss_of(out)
        del out
        loss.backward()
        del loss
        rec.mark(name + ": backward")
        del m


def l03_nograd_peaks(rec, size):
    torch, dev = rec.torch, rec.device
    x = torch.randn(size.batch, size.width, device=dev)
    for layers in (1, 2, 4, 8, 12):
        m = new_mlp(torch, dev, layers, size.width)
        for mode, ctx in (("autograd", contextlib.nullcontext), ("no-grad", torch.no_grad), ("inference", torch.inference_mode)):
            rec.reset_peak()
            with ctx():
                out = mlp_forward(torch, m, x)
                del out
            rec.mark("%d layers, %s" % (layers, mode))
        del m


def checkpoint_sequential(torch, layers, segments, x):
    """gpukit's checkpoint.Sequential, which is checkpoint_sequential
    (torch/utils/checkpoint.py): segments of len(layers) // segments
    layers, every one but the last checkpointed, here non-reentrant and
    recomputing whole segments (early stop off, as gpukit). Written out
    because PyTorch before 2.0 takes no use_reentrant there."""
    import torch.utils.checkpoint as cp
    layers = list(layers)
    size = len(layers) // segments

    def run(part):
        def f(h):
            for layer in part:
                h = layer(h)
            return h
        return f

    early = getattr(cp, "set_checkpoint_early_stop", None)
    h = x
    with early(False) if early else contextlib.nullcontext():
        start = 0
        while start < size * (segments - 1):
            h = cp.checkpoint(run(layers[start:start + size]), h, use_reentrant=False)
            start += size
    return run(layers[start:])(h)


def l07_checkpoint_segments(rec, size):
    torch, dev = rec.torch, rec.device
    nn = torch.nn
    layers = []
    for _ in range(4):
        layers += [nn.Linear(size.width, size.width, device=dev), nn.ReLU()]
    m = nn.Sequential(*layers)
    x = torch.randn(size.ckpt_rows, size.width, device=dev, requires_grad=True)
    rec.mark("model and input")
    for segments in (0, 8, 4, 2):
        rec.reset_peak()
        y = m(x) if segments == 0 else checkpoint_sequential(torch, m, segments, x)
        rec.mark("%d segments: forward" % segments)
        loss = y.mean()
        del y
        loss.backward()
        del loss
        rec.mark("%d segments: backward" % segments)
        m.zero_grad(set_to_none=True)
        x.grad = None


def gpt_classes(torch):
    """Lesson 07's GPT, module by module as gpukit's nn builds it."""
    nn, F = torch.nn, torch.nn.functional

    class Attention(nn.Module):
        """gpukit's nn.MultiheadAttention: packed in_proj_weight [3D, D]
        and in_proj_bias, heads as views of the projection, causal mask,
        out_proj."""

        def __init__(self, dim, heads, device):
            super().__init__()
            self.dim, self.heads = dim, heads
            self.in_proj_weight = nn.Parameter(torch.empty(3 * dim, dim, device=device))
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * dim, device=device))
            nn.init.xavier_uniform_(self.in_proj_weight)
            self.out_proj = nn.Linear(dim, dim, device=device)

        def forward(self, x):
            b, t, d = x.shape
            h, hd = self.heads, d // self.heads
            qkv = F.linear(x, self.in_proj_weight, self.in_proj_bias)
            heads = qkv.view(b, t, 3, h, hd).permute(2, 0, 3, 1, 4)
            q, k, v = heads[0], heads[1], heads[2]
            del qkv, heads
            raw = q.matmul(k.transpose(-1, -2))
            scores = raw * (1 / math.sqrt(hd))
            del raw
            mask = torch.full((t, t), float("-inf")).triu(1).to(x.device).to(scores.dtype)
            masked = scores + mask
            del scores, mask
            probs = torch.softmax(masked, -1)
            del masked
            ctx = probs.matmul(v)
            del probs
            merged = ctx.transpose(1, 2).reshape(b, t, d)
            del ctx
            return self.out_proj(merged)

    class Block(nn.Module):
        def __init__(self, dim, heads, device):
            super().__init__()
            self.ln_1 = nn.LayerNorm(dim, device=device)
            self.attn = Attention(dim, heads, device)
            self.ln_2 = nn.LayerNorm(dim, device=device)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim, device=device), nn.GELU(), nn.Linear(4 * dim, dim, device=device))

        def forward(self, x):
            h = residual(x, self.ln_1, self.attn)
            return residual(h, self.ln_2, self.mlp)

    def residual(x, norm, f):
        n = norm(x)
        y = f(n)
        del n
        return x + y

    class GPT(nn.Module):
        def __init__(self, c, checkpoint, device):
            super().__init__()
            self.emb = nn.Embedding(c["vocab"], c["dim"], device=device)
            self.blocks = nn.Sequential(*[Block(c["dim"], c["heads"], device) for _ in range(c["layers"])])
            self.ln = nn.LayerNorm(c["dim"], device=device)
            self.head = nn.Linear(c["dim"], c["vocab"], device=device)
            self.checkpoint = checkpoint

        def forward(self, ids):
            h = self.emb(ids)
            if self.checkpoint:
                x = checkpoint_sequential(torch, self.blocks, len(self.blocks), h)
            else:
                x = self.blocks(h)
            del h
            n = self.ln(x)
            del x
            return self.head(n)

    return GPT


def gpt_batch(torch, c, device, gen):
    """Random ids and, as targets, each position's previous token."""
    ids = torch.randint(0, c["vocab"], (c["batch"], c["seq"]), generator=gen).to(device)
    targets = torch.zeros(c["batch"], c["seq"], dtype=torch.int64)
    targets[:, 1:] = ids[:, :-1].cpu()
    return ids, targets.view(-1).to(device)


def grad_scaler(torch, device):
    amp = getattr(torch, "amp", None)
    if amp is not None and hasattr(amp, "GradScaler"):
        return amp.GradScaler(torch.device(device).type)
    return torch.cuda.amp.GradScaler(enabled=torch.device(device).type == "cuda")


def l07_gpt_step(rec, c, checkpoint, mixed):
    torch, dev = rec.torch, rec.device
    F = torch.nn.functional
    torch.manual_seed(1)
    model = gpt_classes(torch)(c, checkpoint, dev)
    if torch.device(dev).type == "cuda":
        opt = torch.optim.Adam(model.parameters(), lr=1e-2, fused=True)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-2, foreach=False)
    scaler = grad_scaler(torch, dev)
    params = list(model.parameters())
    rec.value("parameters", {"count": sum(p.numel() for p in params), "bytes": sum(p.numel() * p.element_size() for p in params)})
    rec.mark("model")
    gen = torch.Generator().manual_seed(7)
    dtype = torch.device(dev).type
    for s in (1, 2):
        ids, targets = gpt_batch(torch, c, dev, gen)
        rec.reset_peak()

        def at(phase):
            rec.mark("step %d: %s" % (s, phase))
            rec.reset_peak()

        # The CPU's autocast of PyTorch before 2.x takes only bfloat16:
        # there (the tests) the dtype does not matter.
        half = torch.float16 if dtype == "cuda" else torch.bfloat16
        ctx = torch.autocast(dtype, dtype=half) if mixed else contextlib.nullcontext()
        with ctx:
            logits = model(ids)
            flat = logits.view(-1, logits.size(-1))
            loss = F.cross_entropy(flat, targets)
            del flat, logits
        at("forward")
        if mixed:
            scaler.scale(loss).backward()
            at("backward")
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            at("backward")
            opt.step()
        at("step")
        opt.zero_grad(set_to_none=True)
        at("zero_grad")
        del loss, ids, targets
        at("batch released")
    state = sum(t.numel() * t.element_size() for st in opt.state.values() for t in st.values()
                if torch.is_tensor(t) and t.dim() > 0)
    rec.value("adam state", {"bytes": state})
    del opt, model, params
    gc.collect()
    rec.mark("released")


def steps():
    """Step name -> function(recorder, size)."""
    s = {
        "lesson03-autograd-saves": l03_autograd_saves,
        "lesson03-budget": l03_budget,
        "lesson03-freezing": l03_freezing,
        "lesson03-nograd-peaks": l03_nograd_peaks,
        "lesson07-checkpoint-segments": l07_checkpoint_segments,
    }
    for name, o in GPT_RUNS:
        s["lesson07-gpt-" + name] = lambda rec, size, o=o: l07_gpt_step(rec, size.gpt, **o)
    return s


def run_step(torch, name, device="cuda:0", small=False, memory=None):
    """Runs the step name and returns its lines."""
    fns = steps()
    if name not in fns:
        raise SystemExit("gpu_judge_models: no step %r; the steps are %s" % (name, ", ".join(STEP_NAMES)))
    if memory is None:
        memory = CudaMemory(torch, device) if torch.device(device).type == "cuda" else NoMemory()
    rec = Recorder(torch, device, memory)
    fns[name](rec, SMALL if small else FULL)
    return rec.lines


def main(argv=None, torch_module=None):
    p = argparse.ArgumentParser(prog="gpu_judge_models.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the step names")
    r = sub.add_parser("run", help="run one step and write its lines")
    r.add_argument("step")
    r.add_argument("out")
    r.add_argument("--device", default="cuda:0")
    r.add_argument("--small", action="store_true", help="the dry run's small shapes")
    args = p.parse_args(argv)
    if args.cmd == "list":
        print("\n".join(STEP_NAMES))
        return 0
    torch = torch_module
    if torch is None:
        try:
            import torch  # noqa: F401 (only run needs PyTorch)
        except ImportError as e:
            print("gpu_judge_models: PyTorch is not installed for %s: %s" % (sys.executable, e), file=sys.stderr)
            return 1
    if torch.device(args.device).type == "cuda" and not torch.cuda.is_available():
        print("gpu_judge_models: torch.cuda.is_available() is False: no GPU for PyTorch", file=sys.stderr)
        return 1
    lines = run_step(torch, args.step, args.device, args.small)
    gpu_judge.write_json_atomic(args.out, lines, lines=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
