#!/usr/bin/env bash
# Side-by-side benchmark of gpukit and PyTorch on this machine (issue 22):
# the same ops, shapes and dtype (float32) in gpukit/cmd/benchtorch and in
# scripts/bench_torch.py, both on THREADS threads (GOMAXPROCS for gpukit,
# torch.set_num_threads for PyTorch), median of REPS runs after one
# warm-up. The two sides alternate run by run, so that a change in the
# machine's load touches both alike; each timed run directly follows an
# untimed one on the same side, so neither pays for waking an idle core;
# the training steps put their parameters back before each run, so every
# timed step computes on the same values (a model that trains on computes
# on more and more subnormal floats, slower on both sides).
# Prints one table of times and ratios (PyTorch's time / gpukit's: above
# 1, gpukit is faster) and the load average before and after. Not part of
# make test.
#
#   scripts/bench-torch.sh            (or: make bench-torch)
#   THREADS=2 REPS=7 ONLY=softmax,gelu_fwd scripts/bench-torch.sh
#
# PyTorch: Debian's python3-torch and libopenblas0-pthread
# (apt-get install -y python3-torch libopenblas0-pthread).
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
REPS=${REPS:-7}
ONLY=${ONLY:-}
PY=${PYTHON:-/usr/bin/python3}
if ! "$PY" -c 'import torch' 2>/dev/null; then
	echo "bench-torch: PyTorch is not importable by $PY (apt-get install -y python3-torch libopenblas0-pthread)" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/benchtorch" ./gpukit/cmd/benchtorch
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "PyTorch $("$PY" -c 'import torch; print(torch.__version__)'), $(go version | cut -d' ' -f3); $THREADS threads, float32, median of $REPS"
CASES=${ONLY:-matmul,add,gelu_fwd,softmax,layernorm_fwd_bwd,gelu_fwd_bwd,cross_entropy_fwd_bwd,mlp_adam_step,gpt_step}
# Each case: both sides set up and warm up, then run alternately, one run
# at a time, REPS times each.
"$PY" - "$tmp/benchtorch" "$THREADS" "$REPS" "$CASES" "$tmp" <<'PY'
import os, subprocess, sys, statistics, time
exe, threads, reps, cases, tmp = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(","), sys.argv[5]
env = dict(os.environ, GOMAXPROCS=threads, OMP_NUM_THREADS=threads)
out = {"gpukit": open(f"{tmp}/gpukit.tsv", "w"), "torch": open(f"{tmp}/torch.tsv", "w")}
for c in cases:
    procs = {
        "gpukit": subprocess.Popen([exe, "-serve", "-only", c], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env),
        "torch": subprocess.Popen([sys.executable, "scripts/bench_torch.py", "--serve", "--threads", threads, "--only", c],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env),
    }
    for p in procs.values():
        if p.stdout.readline().strip() != "ready":
            sys.exit(f"bench-torch: {c} did not start")
    ts = {k: [] for k in procs}
    def run(p):
        p.stdin.write("run\n")
        p.stdin.flush()
        return float(p.stdout.readline())
    for _ in range(reps):
        for k, p in procs.items():
            # A pause before each side's turn: OpenBLAS's and OpenMP's
            # idle threads spin for a while after a call, and would
            # otherwise take a core from the other side. Then one untimed
            # run: on a virtual machine, waking an idle vCPU takes from
            # 0.1 to several milliseconds, which the first run after a
            # pause pays; the timed run that follows it measures the op.
            time.sleep(0.3)
            run(p)
            ts[k].append(run(p))
    for k, p in procs.items():
        p.stdin.close()
        p.wait()
        out[k].write(f"{c}\t{statistics.median(ts[k]):.6g}\n")
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" - "$tmp/gpukit.tsv" "$tmp/torch.tsv" <<'PY'
import sys
shapes = {
    "matmul": "1024×1024 @ 1024×1024",
    "add": "4096×4096 (new output)",
    "gelu_fwd": "4096×4096",
    "softmax": "4096×4096, dim=-1",
    "layernorm_fwd_bwd": "8192×1024",
    "gelu_fwd_bwd": "8192×1024",
    "cross_entropy_fwd_bwd": "8192×1000",
    "mlp_adam_step": "1024→4096→1024, batch 512",
    "gpt_step": "lesson 07 GPT, 12×256 tokens",
}
def read(p):
    return dict(line.split("\t") for line in open(p).read().split("\n") if line)
g, t = read(sys.argv[1]), read(sys.argv[2])
print(f"| {'op':22} | {'shape':30} | {'gpukit ms':>10} | {'PyTorch ms':>10} | {'ratio':>6} |")
print(f"| {'-'*22} | {'-'*30} | {'-'*9}: | {'-'*9}: | {'-'*5}: |")
for name in g:
    if name in t:
        gs, ts = float(g[name]), float(t[name])
        print(f"| {name:22} | {shapes.get(name, ''):30} | {gs*1e3:10.2f} | {ts*1e3:10.2f} | {ts/gs:5.2f}× |")
PY
