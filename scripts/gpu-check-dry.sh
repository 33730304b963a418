#!/usr/bin/env bash
# Runs scripts/gpu-check.sh's whole pipeline here, without a GPU or
# PyTorch: a bundle built without the cuda tag (GPU_BUNDLE_TAGS=), the
# device sim:0 (the classroom profile) in place of cuda:0, the model steps'
# small shapes, and python3 without torch. Every step must run; the report
# must fail, and only where a GPU or PyTorch is missing: the cuda package's
# tests skip (no GPU) and PyTorch's replays and model steps do not run. Anything else in the failures fails this script.
#
#   scripts/gpu-check-dry.sh [OUT]     (default: a temporary folder)
#
# GPU_BUNDLE names an untagged bundle to use instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=${1:-$tmp/out}

bundle=${GPU_BUNDLE:-}
if [ -z "$bundle" ]; then
	bundle=$tmp/bundle
	GPU_BUNDLE_TAGS= bash scripts/gpu-bundle.sh "$bundle"
elif ! grep -qx 'tags=' "$bundle/MANIFEST.txt"; then
	echo "gpu-check-dry: $bundle was built with the cuda tag; it cannot run without a GPU" >&2
	exit 1
fi

set +e
GPU_BUNDLE=$bundle GPU_CHECK_DEVICE=sim:0 GPU_CHECK_MODELS_SMALL=1 \
	GPU_CHECK_TEST_FLAGS=-test.short GPU_CHECK_TIMING_FLAGS="-scale 0.01 -repeats 3" \
	bash scripts/gpu-check.sh "$out" >"$tmp/check.log" 2>&1
status=$?
set -e
if [ "$status" -ne 1 ]; then
	cat "$tmp/check.log"
	echo "gpu-check-dry: gpu-check exited $status; want 1 (no GPU, no PyTorch)" >&2
	exit 1
fi

# The failures, less the two expected kinds, must be none.
unexpected=$(/usr/bin/python3 - "$out/report.json" <<'EOF'
import json, re, sys
r = json.load(open(sys.argv[1]))
expected = [
    re.compile(r"^tests of cuda: .* skipped \(no GPU\?\)$"),
    re.compile(r"^[a-z0-9-]+\.torch-vs-cuda: no comparison"),
]
for f in r["failures"]:
    if not any(e.search(f) for e in expected):
        print(f)
missing_torch = sum(1 for c in r["comparisons"] if c["name"].endswith("torch-vs-cuda") and c.get("missing"))
if missing_torch == 0:
    print("PyTorch's replays were expected to be missing")
if not r["lessons"] or any(c["differences"] for c in r["lessons"]):
    print("lessons: none ran, or some differ")
models = r.get("models") or []
if not models or any(c.get("missing") for c in models if c["name"].endswith("sim-vs-cuda")):
    print("model steps: gpukit's runs did not all run")
if any(c["name"].endswith("torch-vs-cuda") and not c.get("missing") for c in models):
    print("PyTorch's model steps were expected to be missing")
if not r["timings"] or not r["timings"]["ok"]:
    print("timings did not run")
EOF
)
if [ -n "$unexpected" ]; then
	cat "$tmp/check.log"
	echo "gpu-check-dry: unexpected failures:" >&2
	echo "$unexpected" >&2
	exit 1
fi
echo "gpu-check-dry: ok: every step ran on sim; the report fails only where a GPU or PyTorch is missing ($out/report.md)"
