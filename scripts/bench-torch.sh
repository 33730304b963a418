#!/usr/bin/env bash
# Side-by-side benchmark of gpukit and PyTorch on this machine (issues 22
# and 39): the same ops, shapes and dtype (float32) in
# gpukit/cmd/benchtorch and in scripts/bench_torch.py, all on THREADS
# threads (GOMAXPROCS for gpukit, torch.set_num_threads for PyTorch),
# median of REPS runs after one warm-up. The sides alternate run by run,
# so that a change in the machine's load touches all alike; after a pause
# (0.3 s, for the other side's threads to stop spinning) each side runs
# untimed for WARM_MS of its own work (default 50, at least one run)
# before its timed run: on this virtual machine the runs of the first
# 10-25 ms after an idle pause are slow, on every side
# (gpukit/kernels/README.md); the first run after each pause is printed
# in a second table. The training steps put their parameters back before
# each run, so every timed step computes on the same values (a model
# that trains on computes on more and more subnormal floats, slower on
# every side).
#
# The sides:
#   gpukit          on a simulated card (sim); its first call, which takes
#                   fresh segments for its outputs, is shown beside the
#                   median ("first ms")
#   torch1          Debian 12's python3-torch (1.13.1), as installed
#   torch2          Debian 13's python3-torch (2.x) in a trixie chroot
#                   (scripts/trixie-torch.sh makes it on first use), as
#                   installed
#   torch2w         the same with a warm heap: glibc keeps freed memory in
#                   the process (MALLOC_MMAP_MAX_=0: no mmap per large block;
#                   MALLOC_TRIM_THRESHOLD_ and MALLOC_TOP_PAD_ large: no
#                   trim), as gpukit's caching allocator does; otherwise
#                   every output above glibc's mmap threshold is a fresh
#                   mapping whose pages fault on first touch. (Debian's
#                   libjemalloc2 by LD_PRELOAD, which PyTorch's CPU tuning
#                   guide suggests, also keeps memory, but gives dirty pages
#                   back after its decay time, 10 s by default; the glibc
#                   settings need nothing installed and keep everything.)
# SIDES=gpukit,torch1 picks some. Without root or debootstrap the torch2
# sides are left out, with a notice.
#
# It also measures the memory bandwidth, STREAM's copy, scale, add and
# triad on THREADS threads over 64 MiB arrays (benchtorch -stream: scale
# and add are gpukit's vector loops, copy is Go's memmove and triad a Go
# loop), before and after the cases; the best figure is the bandwidth the
# memory-bound ops are compared with, as the bytes each must move (every
# input read once, every output written once, per pass; bench_bytes
# below) per second.
#
# Prints two tables: the times, the ratio PyTorch 2.x warm heap's time /
# gpukit's (above 1, gpukit is faster) and the fraction of the bandwidth;
# then the first runs after the pauses, with the same ratio. The load
# average before and after. Not part of make test.
#
#   scripts/bench-torch.sh            (or: make bench-torch)
#   THREADS=2 REPS=7 WARM_MS=50 ONLY=softmax,gelu_fwd SIDES=gpukit,torch2w scripts/bench-torch.sh
#
# PyTorch 1.13: Debian 12's python3-torch and libopenblas0-pthread
# (apt-get install -y python3-torch libopenblas0-pthread).
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
REPS=${REPS:-7}
WARM_MS=${WARM_MS:-50}
case $WARM_MS in
'' | *[!0-9]*)
	echo "bench-torch: WARM_MS=$WARM_MS is not a whole number of milliseconds (such as 50; 0: one untimed run)" >&2
	exit 2
	;;
esac
ONLY=${ONLY:-}
SIDES=${SIDES:-gpukit,torch1,torch2,torch2w}
PY=${PYTHON:-/usr/bin/python3}
WARM_HEAP="MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=1000000000000 MALLOC_TOP_PAD_=1000000000"
has() { case ",$SIDES," in *",$1,"*) return 0 ;; esac; return 1; }
drop() { SIDES=$(echo ",$SIDES," | sed "s/,$1,/,/; s/^,//; s/,$//"); }
if has torch1 && ! "$PY" -c 'import torch' 2>/dev/null; then
	echo "bench-torch: PyTorch is not importable by $PY (apt-get install -y python3-torch libopenblas0-pthread)" >&2
	exit 1
fi
T2=(scripts/trixie-torch.sh run)
if has torch2 || has torch2w; then
	if [ "$(id -u)" != 0 ] || ! command -v debootstrap >/dev/null; then
		echo "bench-torch: PyTorch 2.x left out: scripts/trixie-torch.sh needs root and debootstrap" >&2
		drop torch2; drop torch2w
	elif ! scripts/trixie-torch.sh ensure >/dev/null; then
		echo "bench-torch: PyTorch 2.x left out: its chroot could not be made" >&2
		drop torch2; drop torch2w
	fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/benchtorch" ./gpukit/cmd/benchtorch
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
v1=$(has torch1 && "$PY" -c 'import torch; print(torch.__version__)' || echo -)
v2=$( (has torch2 || has torch2w) && "${T2[@]}" python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || echo -)
echo "PyTorch $v1 (torch1), $v2 (torch2, torch2w: $WARM_HEAP), $(go version | cut -d' ' -f3); $THREADS threads, float32, median of $REPS; sides $SIDES"
CASES=${ONLY:-matmul,add,gelu_fwd,softmax,layernorm_fwd_bwd,gelu_fwd_bwd,cross_entropy_fwd_bwd,adam,mlp_adam_step,gpt_step}
GOMAXPROCS=$THREADS "$tmp/benchtorch" -stream -reps 10 >"$tmp/stream.before"
# Each case: every side sets up and warms up (the first call's seconds
# kept), then they run in turn, one run at a time, REPS times each.
"$PY" - "$tmp/benchtorch" "$THREADS" "$REPS" "$CASES" "$tmp" "$SIDES" "$WARM_HEAP" "$WARM_MS" <<'PY'
import os, subprocess, sys, statistics, time
exe, threads, reps, cases, tmp, sides, warm = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(","), sys.argv[5], sys.argv[6].split(","), sys.argv[7]
warm_s = float(sys.argv[8]) / 1e3
env = dict(os.environ, GOMAXPROCS=threads, OMP_NUM_THREADS=threads)
warm_env = dict(env, **dict(kv.split("=") for kv in warm.split()))
src = open("scripts/bench_torch.py").read()
def torch_args(py, c):
    return [*py, "-c", src, "--serve", "--threads", threads, "--only", c]
t2 = ["scripts/trixie-torch.sh", "run", "python3"]
cmds = {
    "gpukit": lambda c: ([exe, "-serve", "-only", c], env),
    "torch1": lambda c: (torch_args([sys.executable], c), env),
    "torch2": lambda c: (torch_args(t2, c), env),
    "torch2w": lambda c: (torch_args(t2, c), warm_env),
}
out = open(f"{tmp}/times.tsv", "w")
for c in cases:
    procs = {}
    first = {}
    for k in sides:
        argv, e = cmds[k](c)
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=e)
        line = p.stdout.readline().split()
        if not line or line[0] != "ready":
            sys.exit(f"bench-torch: {c} did not start on {k}")
        procs[k], first[k] = p, float(line[1])
    ts = {k: [] for k in procs}
    paused = {k: [] for k in procs}
    def run(p):
        p.stdin.write("run\n")
        p.stdin.flush()
        return float(p.stdout.readline())
    for _ in range(reps):
        for k, p in procs.items():
            # A pause before each side's turn: OpenBLAS's and OpenMP's
            # idle threads spin for a while after a call, and would
            # otherwise take a core from the other side. Then untimed
            # runs until the side has computed for WARM_MS (at least
            # one run): on this virtual machine the runs after a pause
            # are slow for 10-25 ms of work, not only the first (on both
            # sides, gpukit's more), which is the machine's cost, not
            # the op's, and a training step, whose ops follow each
            # other, does not pay. The first run after the pause is kept
            # too ("after a pause").
            time.sleep(0.3)
            paused[k].append(run(p))
            busy, runs = paused[k][-1], 1
            while busy < warm_s and runs < 1000:  # (a run of ~0 s ends too)
                busy += run(p)
                runs += 1
            ts[k].append(run(p))
    for k, p in procs.items():
        p.stdin.close()
        p.wait()
        out.write(f"{c}\t{k}\t{statistics.median(ts[k]):.6g}\t{first[k]:.6g}\t{statistics.median(paused[k]):.6g}\n")
    out.flush()
PY
GOMAXPROCS=$THREADS "$tmp/benchtorch" -stream -reps 10 >"$tmp/stream.after"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" - "$tmp" "$THREADS" <<'PY'
import sys
tmp, threads = sys.argv[1], sys.argv[2]
shapes = {
    "matmul": "1024×1024 @ 1024×1024",
    "add": "4096×4096 (new output)",
    "gelu_fwd": "4096×4096",
    "softmax": "4096×4096, dim=-1",
    "layernorm_fwd_bwd": "8192×1024",
    "gelu_fwd_bwd": "8192×1024",
    "cross_entropy_fwd_bwd": "8192×1000",
    "adam": "4096×4096 parameter",
    "mlp_adam_step": "1024→4096→1024, batch 512",
    "gpt_step": "lesson 07 GPT, 12×256 tokens",
}
# bench_bytes: what each memory-bound op must move at least, float32
# (4 bytes), N the elements of its main tensor: every input read once and
# every output written once, per pass; vectors of a row's length and
# per-row statistics (O(rows + n)) left out.
N16, N8, NCE = 4096 * 4096, 8192 * 1024, 8192 * 1000
bench_bytes = {
    "add": (12 * N16, "12N: a, b read, out written"),
    "gelu_fwd": (8 * N16, "8N: x read, y written"),
    "softmax": (8 * N16, "8N: x read, y written"),
    "layernorm_fwd_bwd": (20 * N8, "20N: x read, y written; g, x read, dx written"),
    "gelu_fwd_bwd": (20 * N8, "20N: x read, y written; g, x read, dx written"),
    "cross_entropy_fwd_bwd": (12 * NCE, "12N: x read; x read, dx written"),
    "adam": (28 * N16, "28N: p, g, m, v read; p, m, v written"),
}
bw = {}
for when in ("before", "after"):
    for line in open(f"{tmp}/stream.{when}"):
        k, v = line.split()
        bw[k] = max(bw.get(k, 0), float(v))
B = max(bw.values())
rates = ", ".join(f"{k} {v/1e9:.1f}" for k, v in bw.items())
print(f"memory bandwidth, {threads} threads, best of before and after: {rates} GB/s; B = {B/1e9:.1f} GB/s")
t = {}
for line in open(f"{tmp}/times.tsv"):
    c, k, med, first, after_pause = line.split("\t")
    t.setdefault(c, {})[k] = (float(med), float(first), float(after_pause))
sides = ["gpukit", "torch1", "torch2", "torch2w"]
names = {"torch1": "PyTorch 1.13 ms", "torch2": "PyTorch 2 ms", "torch2w": "PyTorch 2 warm ms"}
base = "torch2w" if any("torch2w" in v for v in t.values()) else "torch1"
have = [k for k in sides[1:] if any(k in v for v in t.values())]
cols = ["op", "shape", "gpukit first ms", "gpukit ms"] + [names[k] for k in have] + [f"{names[base][:-3]} / gpukit", "gpukit % of B", f"{names[base][:-3]} % of B"]
print("| " + " | ".join(cols) + " |")
print("| --- | --- | " + " | ".join(["---:"] * (len(cols) - 2)) + " |")
def ms(x):
    return f"{x * 1e3:.2f}" if x is not None else "-"
for c, v in t.items():
    g = v.get("gpukit", (None, None))
    row = [c, shapes.get(c, ""), ms(g[1]), ms(g[0])] + [ms(v.get(k, (None,))[0]) for k in have]
    b = v.get(base, (None,))[0]
    row.append(f"{b / g[0]:.2f}×" if b and g[0] else "-")
    if c in bench_bytes:
        n = bench_bytes[c][0]
        row.append(f"{100 * n / g[0] / B:.0f} %" if g[0] else "-")
        row.append(f"{100 * n / b / B:.0f} %" if b else "-")
    else:
        row += ["", ""]
    print("| " + " | ".join(row) + " |")
print()
# The first run after each pause, which the table above leaves out: what a
# notebook cell that runs one op after the learner paused pays here.
print("The first run after each 0.3 s pause (median), ms:")
print()
cols = ["op", "gpukit ms"] + [names[k] for k in have] + [f"{names[base][:-3]} / gpukit"]
print("| " + " | ".join(cols) + " |")
print("| --- | " + " | ".join(["---:"] * (len(cols) - 1)) + " |")
for c, v in t.items():
    g = v.get("gpukit", (None, None, None))[2]
    b = v.get(base, (None, None, None))[2]
    row = [c, ms(g)] + [ms(v.get(k, (None, None, None))[2]) for k in have]
    row.append(f"{b / g:.2f}×" if b and g else "-")
    print("| " + " | ".join(row) + " |")
print()
for c, (n, why) in bench_bytes.items():
    if c in t:
        print(f"{c}: {why}, N = {n // int(why.split('N')[0])}: {n / 1e6:.0f} MB")
PY
