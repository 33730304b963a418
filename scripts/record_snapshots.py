#!/usr/bin/env python3
"""Records real PyTorch memory snapshots of the course's GPT step on a card,
one process per allocator setting, as the ground truth of memtrace's
"what if" (issue 37): the same program replayed under setting B must show
what PyTorch itself did when the program ran under B.

    record_snapshots.py OUTDIR [--device cuda:0] [--small] [--only NAME,...]

Each scenario runs in a fresh Python process, because PyTorch reads
PYTORCH_CUDA_ALLOC_CONF once, when the allocator starts
(c10/cuda/CUDAAllocatorConfig.cpp). For each it writes

    OUTDIR/NAME.pickle   torch.cuda.memory._dump_snapshot(), python frames only
    OUTDIR/NAME.json     the setting, the cap, torch.cuda.memory_stats(), the
                         torch version and card, and the OOM if one happened

The workload is lesson 07's GPT (scripts/gpu_judge_models.py, gpt_classes)
trained for several steps on sequences of changing length, so that cached
blocks are split and reused in ways where the settings differ; one
scenario adds a second stream (a prefetch of the next batch and a side
computation, handed back with record_stream). The tight scenarios cap the
allocator with torch.cuda.set_per_process_memory_fraction at a size taken
from the default run's own peaks, so that PyTorch frees its cache and
retries (the cap between peak allocated and peak reserved) or runs out of
memory (the cap below peak allocated).
"""

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# Sequence lengths of the steps: changing shapes split cached blocks.
SEQS = (256, 160, 256, 96, 224, 128, 256, 192)
SEQS_SMALL = (16, 12, 16, 8)

MIB = 1 << 20


def scenarios(default_stats):
    """The scenarios after the default run; caps are relative to its peaks."""
    s = [
        dict(name="gpt-expandable", conf="expandable_segments:True"),
        dict(name="gpt-max-split-64", conf="max_split_size_mb:64"),
        dict(name="gpt-roundup-4", conf="roundup_power2_divisions:4"),
        dict(name="gpt-mixed", conf="", mixed=True),
        dict(name="gpt-wrapped", conf="", max_entries=3000),
        dict(name="streams", conf="", workload="streams"),
        dict(name="streams-expandable", conf="expandable_segments:True", workload="streams"),
    ]
    if default_stats:
        pa = default_stats["allocated_bytes.all.peak"]
        pr = default_stats["reserved_bytes.all.peak"]
        # Between peak allocated and peak reserved: the cache must be
        # released (and the allocation retried) to fit.
        between = pa + (pr - pa) // 3
        below = int(pa * 0.9)
        s += [
            dict(name="gpt-tight", conf="", cap=between),
            dict(name="gpt-tight-expandable", conf="expandable_segments:True", cap=between),
            dict(name="gpt-tight-gc", conf="garbage_collection_threshold:0.6", cap=between),
            dict(name="gpt-tight-max-split", conf="max_split_size_mb:64", cap=between),
            dict(name="gpt-oom", conf="", cap=below),
            dict(name="gpt-oom-expandable", conf="expandable_segments:True", cap=below),
        ]
    return s


def gpt_steps(torch, device, small, mixed):
    import gpu_judge_models as m
    F = torch.nn.functional
    c = dict(m.GPT_SMALL if small else m.GPT_BIG)
    torch.manual_seed(1)
    model = m.gpt_classes(torch)(c, False, device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
    scaler = m.grad_scaler(torch, device) if mixed else None
    gen = torch.Generator().manual_seed(7)
    for seq in SEQS_SMALL if small else SEQS:
        c["seq"] = seq
        ids, targets = m.gpt_batch(torch, c, device, gen)
        with torch.autocast("cuda", dtype=torch.float16, enabled=mixed):
            logits = model(ids)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets)
            del logits
        if mixed:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        opt.zero_grad(set_to_none=True)
        del loss, ids, targets
    torch.cuda.synchronize()
    del opt, model
    gc.collect()


def stream_steps(torch, device, small):
    """Two streams: the next batch is prefetched from pinned memory on a
    side stream, and a side computation runs there; tensors made on the
    side stream and used on the main one are handed over with
    record_stream, so their blocks return to the pool only after the main
    stream's work on them (CUDACachingAllocator.cpp, recordStream)."""
    n = 256 if small else 4096
    side = torch.cuda.Stream(device)
    main = torch.cuda.current_stream(device)
    w = torch.randn(n, n, device=device)
    host = [torch.randn(n // 2 + 64 * i, n).pin_memory() for i in range(6)]
    nxt = None
    with torch.cuda.stream(side):
        nxt = host[0].to(device, non_blocking=True)
    for i in range(6):
        main.wait_stream(side)
        cur = nxt
        cur.record_stream(main)
        extra = None
        if i + 1 < len(host):
            with torch.cuda.stream(side):
                nxt = host[i + 1].to(device, non_blocking=True)
                extra = torch.relu(w[: n // 4] @ w)
            extra.record_stream(main)
        h = torch.tanh(cur @ w)
        y = (h @ w).sum()
        if extra is not None:
            y = y + extra.sum()
        del h, cur, extra
        y.item()
    torch.cuda.synchronize()


def worker(spec, outdir, device, small):
    import torch
    torch.cuda.init()
    name = spec["name"]
    meta = dict(spec, torch=torch.__version__, card=torch.cuda.get_device_name(device),
                total_memory=torch.cuda.get_device_properties(device).total_memory,
                alloc_conf=os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""))
    # cuBLAS's workspace and the context come first, outside the trace.
    a = torch.ones(8, 8, device=device, requires_grad=True)
    a.matmul(a).sum().backward()
    del a
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    if spec.get("cap"):
        frac = spec["cap"] / meta["total_memory"]
        torch.cuda.set_per_process_memory_fraction(frac, device)
        meta["fraction"] = frac
    torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                             max_entries=spec.get("max_entries", 1000000))
    t0 = time.time()
    try:
        if spec.get("workload") == "streams":
            stream_steps(torch, device, small)
        else:
            gpt_steps(torch, device, small, spec.get("mixed", False))
    except torch.OutOfMemoryError as e:
        meta["oom"] = str(e).splitlines()[0][:400]
    meta["seconds"] = time.time() - t0
    torch.cuda.synchronize()
    torch.cuda.memory._dump_snapshot(os.path.join(outdir, name + ".pickle"))
    torch.cuda.memory._record_memory_history(enabled=None)
    meta["memory_stats"] = {k: v for k, v in torch.cuda.memory_stats(device).items()}
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)


def measure(outdir, device, small):
    """Lessons 05 and 07 on the real card (issue 35, "real beside
    simulated"): lesson 05's 64 MiB host-to-device copy in its four
    combinations (how long the host is blocked, when the copy ends), and
    lesson 07's GPT step with and without checkpointing (time, peak)."""
    import torch
    import gpu_judge_models as m
    out = dict(torch=torch.__version__, card=torch.cuda.get_device_name(device))
    n = (4 if small else 64) * MIB
    dev = torch.empty(n, dtype=torch.uint8, device=device)
    s = torch.cuda.Stream(device)
    copies = []
    for pinned in (False, True):
        host = torch.empty(n, dtype=torch.uint8, pin_memory=pinned)
        host.fill_(1)
        for non_blocking in (False, True):
            best = None
            for _ in range(5):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                with torch.cuda.stream(s):
                    dev.copy_(host, non_blocking=non_blocking)
                blocked = time.perf_counter() - t0
                s.synchronize()
                done = time.perf_counter() - t0
                if best is None or done < best[1]:
                    best = (blocked, done)
            copies.append(dict(pinned=pinned, non_blocking=non_blocking, bytes=n,
                               host_blocked_ms=best[0] * 1e3, done_ms=best[1] * 1e3,
                               gb_per_s=n / best[1] / 1e9))
    out["lesson05_copies"] = copies
    F = torch.nn.functional
    steps = []
    for ckpt in (False, True):
        c = dict(m.GPT_SMALL if small else m.GPT_BIG)
        torch.manual_seed(1)
        model = m.gpt_classes(torch)(c, ckpt, device)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
        gen = torch.Generator().manual_seed(7)
        times = []
        for i in range(6):
            ids, targets = m.gpt_batch(torch, c, device, gen)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats(device)
            base = torch.cuda.memory_allocated(device)
            t0 = time.perf_counter()
            loss = F.cross_entropy(model(ids).view(-1, c["vocab"]), targets)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
            peak = torch.cuda.max_memory_allocated(device) - base
            del loss, ids, targets
        steps.append(dict(checkpoint=ckpt, step_ms_median=sorted(times[2:])[len(times[2:]) // 2] * 1e3,
                          peak_above_start_bytes=peak, gpt=c))
        del model, opt
        gc.collect()
        torch.cuda.empty_cache()
    out["lesson07_gpt_step"] = steps
    with open(os.path.join(outdir, "measurements.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)


def run(spec, outdir, device, small):
    env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=spec["conf"])
    if not spec["conf"]:
        env.pop("PYTORCH_CUDA_ALLOC_CONF")
    t0 = time.time()
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec), outdir,
                        "--device", device] + (["--small"] if small else []), env=env)
    print("record_snapshots: %-22s exit %d, %.1f s" % (spec["name"], p.returncode, time.time() - t0), flush=True)
    path = os.path.join(outdir, spec["name"] + ".json")
    if p.returncode != 0 or not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def main(argv=None):
    p = argparse.ArgumentParser(prog="record_snapshots.py", description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--small", action="store_true")
    p.add_argument("--only", default="")
    p.add_argument("--worker", default="")
    args = p.parse_args(argv)
    os.makedirs(args.outdir, exist_ok=True)
    if args.worker == "measure":
        measure(args.outdir, args.device, args.small)
        return 0
    if args.worker:
        try:
            worker(json.loads(args.worker), args.outdir, args.device, args.small)
        except Exception:
            traceback.print_exc()
            return 1
        return 0
    only = set(filter(None, args.only.split(",")))
    t0 = time.time()
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", "measure", args.outdir,
                        "--device", args.device] + (["--small"] if args.small else []))
    print("record_snapshots: measurements exit %d, %.1f s" % (p.returncode, time.time() - t0), flush=True)
    default = run(dict(name="gpt-default", conf=""), args.outdir, args.device, args.small)
    stats = default["memory_stats"] if default else None
    failed = 0 if default else 1
    for spec in scenarios(stats):
        if only and spec["name"] not in only:
            continue
        if run(spec, args.outdir, args.device, args.small) is None:
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
