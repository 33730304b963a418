#!/usr/bin/env bash
# Proves gpukit's cuda backend on a machine with an NVIDIA GPU, in one
# command, from the folder scripts/gpu-bundle.sh built (no Go needed here):
#
#   scripts/gpu-check.sh [OUT]        (default gpu-check-out/)
#
# It writes OUT/report.md and OUT/report.json (gpukit/cmd/gpucheck/report.go
# lists the whole folder) with:
#   1. every gpukit test binary (-tags cuda), run in its package's folder:
#      the cuda package's tests (the allocator conformance suite, copies,
#      kernels against gpukit/kernels) on cuda:0, the others as built; then
#      tensor, nn, optim, checkpoint, amp and data again with
#      GPUKIT_DEVICE=cuda:0, so that their tensors live on the card;
#   2. the memory the CUDA context takes, beside the profile's figure;
#   3. the lessons' memory statistics after every cell on cuda:0 beside sim
#      with the card's profile (bin/lessons, scripts/lessonprog);
#   4. PyTorch as the judge: each allocator trace replayed by memtrace on
#      sim and on cuda:0 and by scripts/gpu_judge.py through PyTorch's
#      caching allocator on the same card, compared line by line;
#   5. the course's model steps (lesson 03's saved tensors, lesson 07's GPT
#      step): gpukit on the device and on sim (a meta device with the
#      card's profile), PyTorch on the same card (scripts/gpu_judge_models.py),
#      each point's memory compared with gpukit's on the device;
#   6. modelled against measured times of gemm, elementwise, H2D pinned and
#      pageable copies and D2D copies.
# Exit status 0 only when everything ran and agreed (gpucheck report).
#
# Environment: GPU_BUNDLE (default gpu-bundle), GPU_CHECK_DEVICE (default
# cuda:0; sim:0 runs the pipeline without a GPU), PYTHON (default python3,
# with PyTorch), GPU_CHECK_TEST_FLAGS (extra flags for the test binaries),
# GPU_CHECK_MODELS_SMALL (1: the model steps' small shapes, for a dry run).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bundle=${GPU_BUNDLE:-$root/gpu-bundle}
out=${1:-$root/gpu-check-out}
device=${GPU_CHECK_DEVICE:-cuda:0}
python=${PYTHON:-python3}
judge=$root/scripts/gpu_judge.py

if [ ! -f "$bundle/gpukit-cuda.tar.xz" ]; then
	echo "gpu-check: no $bundle/gpukit-cuda.tar.xz: run make gpu-bundle where Go is installed, and carry gpu-bundle/ here" >&2
	exit 2
fi
# The binaries were linked on the build machine against its glibc.
need=$(sed -n 's/^glibc_needed=//p' "$bundle/MANIFEST.txt" 2>/dev/null)
have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
if [ -n "$need" ] && [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
	echo "gpu-check: the bundle needs glibc $need or newer; this machine has $have (build the bundle on an older system)" >&2
	exit 2
fi
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
mkdir -p "$out"
rm -rf "$out/tests" "$out/traces" "$out/judge" "$out/lessons" "$out/models"
mkdir -p "$out/tests" "$out/traces" "$out/judge" "$out/lessons" "$out/models"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xJf "$bundle/gpukit-cuda.tar.xz" -C "$work" || { echo "gpu-check: cannot unpack the bundle" >&2; exit 2; }
bin=$work/bin

# cuBLAS and NVRTC: gpukit opens them at run time and looks in the usual
# places; PyTorch's wheels put them under site-packages/nvidia, which we add
# to the loader's path (the NVRTC of CUDA 13 also needs its builtins beside).
pylibs=$("$python" - <<'EOF' 2>/dev/null
import os
try:
    import nvidia
    dirs = [os.path.join(b, s) for b in nvidia.__path__ for s in ("cu13/lib", "cublas/lib", "cuda_nvrtc/lib")]
    print(":".join(d for d in dirs if os.path.isdir(d)))
except ImportError:
    pass
EOF
)
export LD_LIBRARY_PATH=${pylibs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

step() { echo "gpu-check: $*" >&2; }

# The machine, for the report.
{
	echo "date=$(date -u +%FT%TZ)"
	echo "device=$device"
	if command -v nvidia-smi >/dev/null; then
		echo "card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
		echo "driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
		echo "cuda_driver=$(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -1)"
	fi
	echo "pytorch=$("$python" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null || echo none)"
	echo "ld_library_path=$LD_LIBRARY_PATH"
	sed 's/^/bundle_/' "$bundle/MANIFEST.txt" 2>/dev/null
} >"$out/env.txt"

# 1. Package tests, each in its package's folder (testdata): first as
# built (the cuda package's tests use cuda:0 itself), then the training
# toolkit's with GPUKIT_DEVICE, so that their default device is the card.
run_tests() { # SUFFIX ENV...: run every binary in tests.txt, or those named in $only
	local suffix=$1 binary dir name
	shift
	while read -r binary dir; do
		name=${binary%.test}
		if [ -n "${only:-}" ] && [[ " $only " != *" $name "* ]]; then continue; fi
		(cd "$root/$dir" && env "$@" "$work/tests/$binary" -test.v -test.count=1 -test.timeout=15m ${GPU_CHECK_TEST_FLAGS:-} \
			>"$out/tests/$name$suffix.log" 2>&1
		echo $? >"$out/tests/$name$suffix.rc")
		step "  $name$suffix: exit $(cat "$out/tests/$name$suffix.rc")"
	done <"$work/tests.txt"
}
step "package tests"
only="" run_tests ""
step "the training toolkit's tests with GPUKIT_DEVICE=$device"
only="tensor nn optim checkpoint amp data" run_tests "@default-device" GPUKIT_DEVICE="$device"

# 2. The CUDA context, in a fresh process: also names the card's profile.
step "CUDA context"
"$bin/gpucheck" context -device "$device" "$out/context.json" 2>"$out/context.err"
profile=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["profile"])' "$out/context.json" 2>/dev/null || echo classroom)

# 3. The lessons, cell by cell, each cell in its own process as in GoNB:
# on the device, then on sim with the card's profile. GOGC=off on both
# sides: a tensor a cell forgets goes back when the collector runs
# (runtime.AddCleanup), which would make the peaks of two runs differ
# (cell 09:0's allocated peak was 19968, 28160 and 28672 bytes in three
# runs on sim); with it off, only the cells' own runtime.GC calls collect.
if [ -x "$bin/lessons" ]; then
	step "lessons on $device and on sim ($profile)"
	for cell in $("$bin/lessons" -list); do
		f=$out/lessons/${cell/:/-}
		(cd "$root/notebooks" && GOGC=off GPUKIT_DEVICE=$device timeout 600 "$bin/lessons" -run "$cell" -stats "$f.cuda.json" >"$f.cuda.out" 2>&1)
		(cd "$root/notebooks" && GOGC=off GPUKIT_DEVICE=sim:0 GPUKIT_PROFILE=$profile timeout 600 "$bin/lessons" -run "$cell" -stats "$f.sim.json" >"$f.sim.out" 2>&1)
	done
fi

# 4. The judge: memtrace on sim and on the device, PyTorch on the device.
step "allocator traces: gpukit on sim and $device, PyTorch on the same card"
"$bin/gpucheck" traces "$out/traces"
for trace in "$out"/traces/*.jsonl; do
	name=$(basename "$trace" .jsonl)
	conf=$(cat "$out/traces/$name.conf" 2>/dev/null || true)
	j=$out/judge/$name
	"$bin/memtrace" replay --device-memory 80GiB --alloc-conf "$conf" <"$trace" >"$j.sim.jsonl" 2>"$j.sim.err"
	"$bin/memtrace" replay --device "$device" --alloc-conf "$conf" <"$trace" >"$j.cuda.jsonl" 2>"$j.cuda.err"
	"$python" "$judge" compare "$j.sim.jsonl" "$j.cuda.jsonl" --names sim,cuda --json "$j.sim-vs-cuda.json" >/dev/null 2>&1
	# Recent PyTorch also reads PYTORCH_ALLOC_CONF (c10/core/AllocatorConfig.cpp,
	# pytorch/pytorch#167659): only the trace's configuration may apply.
	if env -u PYTORCH_ALLOC_CONF PYTORCH_CUDA_ALLOC_CONF="$conf" "$python" "$judge" replay "$trace" "$j.torch.jsonl" 2>"$j.torch.err"; then
		"$python" "$judge" compare "$j.torch.jsonl" "$j.cuda.jsonl" --names torch,gpukit --json "$j.torch-vs-cuda.json" >/dev/null 2>&1
	fi
done

# 5. The model steps, each in its own processes: gpukit on the device and
# on sim (meta: the full GPT would compute for minutes on the CPU, and
# allocates the same, models_test.go), PyTorch on the same card. The
# PyTorch side runs with its allocator's defaults, as gpukit's does, and
# gpukit's with GOGC=off, as the lessons' (a tensor that an op forgets
# would otherwise go back whenever the collector runs).
step "model steps: gpukit on $device and on sim ($profile), PyTorch on the same card"
go_small=() py_small=()
if [ "${GPU_CHECK_MODELS_SMALL:-}" = 1 ]; then go_small=(-small) py_small=(--small); fi
for name in $("$bin/gpucheck" models -list); do
	m=$out/models/$name
	GOGC=off "$bin/gpucheck" models -device "$device" "${go_small[@]}" "$name" "$m.cuda.jsonl" 2>"$m.cuda.err"
	GOGC=off "$bin/gpucheck" models -device meta:0 -profile "$profile" "${go_small[@]}" "$name" "$m.sim.jsonl" 2>"$m.sim.err"
	"$python" "$judge" compare "$m.sim.jsonl" "$m.cuda.jsonl" --names sim,cuda --json "$m.sim-vs-cuda.json" >/dev/null 2>&1
	if env -u PYTORCH_ALLOC_CONF -u PYTORCH_CUDA_ALLOC_CONF "$python" "$root/scripts/gpu_judge_models.py" run --device "$device" "${py_small[@]}" "$name" "$m.torch.jsonl" 2>"$m.torch.err"; then
		"$python" "$judge" compare "$m.torch.jsonl" "$m.cuda.jsonl" --names torch,gpukit --json "$m.torch-vs-cuda.json" >/dev/null 2>&1
	fi
done

# 6. Modelled against measured times.
step "timings"
"$bin/gpucheck" timings -device "$device" -profile "$profile" ${GPU_CHECK_TIMING_FLAGS:-} "$out/timings.json" 2>"$out/timings.err"

"$bin/gpucheck" report "$out"
status=$?
step "report: $out/report.md (exit $status)"
exit $status
