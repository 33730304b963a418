#!/usr/bin/env python3
"""PyTorch as the judge of gpukit's caching allocator, on the same card.

gpukit reproduces the policy of PyTorch's CUDA caching allocator
(c10/cuda/CUDACachingAllocator.cpp). This script replays an allocator trace
(memtrace's JSON-lines format, gpukit/cmd/memtrace/doc.go) through PyTorch's
own allocator and writes PyTorch's answers in memtrace's output format, so
that the two can be compared line by line:

    gpu_judge.py replay TRACE.jsonl OUT.jsonl
        replays TRACE through torch.cuda.caching_allocator_alloc and
        caching_allocator_delete on cuda:0 (empty_cache, reset_peak and
        set_fraction map to torch.cuda.empty_cache,
        reset_peak_memory_stats and set_per_process_memory_fraction) and
        writes, per line, ok/error, the block's offset inside its segment
        (from torch.cuda.memory_snapshot()) and the statistics of
        torch.cuda.memory_stats() under the keys memtrace writes.
        PYTORCH_CUDA_ALLOC_CONF is taken from the environment, so run one
        process per configuration (gpu-check.sh does).

    gpu_judge.py compare EXPECTED.jsonl GOT.jsonl [--json OUT.json]
        compares two outputs (memtrace's and PyTorch's, or memtrace on sim
        and on cuda:0; or a model step's, gpu_judge_models.py and gpucheck
        models, whose lines also have a name) and exits 1 on any
        difference: a line's name, ok/error, its offset, or any statistic
        both sides report. A statistic only one
        side reports (an older PyTorch lacks num_device_alloc) is listed as
        unavailable, not as a difference.

Only the standard library is imported at the top: torch is imported by
replay alone, so that compare and the tests (gpu_judge_test.py, with a fake
torch) run where PyTorch is not installed.
"""

import argparse
import json
import os
import sys
import tempfile

# How many differences a comparison lists before it only counts them.
MAX_LISTED = 20


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_json_atomic(path, obj, lines=False):
    """Writes obj (a list of objects, one per line, when lines) to path
    through a temporary file and a rename."""
    path = os.path.realpath(path)
    if os.path.lexists(path) and not os.path.isfile(path):
        raise SystemExit("gpu_judge: %s exists and is not a regular file" % path)
    d = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".gpu_judge.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            if lines:
                for o in obj:
                    f.write(json.dumps(o, separators=(",", ":")) + "\n")
            else:
                json.dump(obj, f, indent=1, sort_keys=True)
                f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


# The statistics memtrace writes, in its order (gpukit/cmd/memtrace/doc.go).
STAT_KEYS = [
    "allocated_bytes.all.current",
    "allocated_bytes.all.peak",
    "reserved_bytes.all.current",
    "reserved_bytes.all.peak",
    "active_bytes.all.current",
    "requested_bytes.all.current",
    "inactive_split_bytes.all.current",
    "allocation.all.current",
    "segment.all.current",
    "inactive_split.all.current",
    "allocated_bytes.small_pool.current",
    "allocated_bytes.large_pool.current",
    "reserved_bytes.small_pool.current",
    "reserved_bytes.large_pool.current",
    "num_device_alloc",
    "num_device_free",
    "num_alloc_retries",
    "num_ooms",
]


class Replayer:
    """Replays memtrace operations on torch (the module, or a fake with the
    same functions) and produces memtrace's output lines."""

    def __init__(self, torch, device=0):
        self.torch = torch
        self.device = device
        self.live = {}  # id -> pointer (None for a size-0 allocation)
        self.streams = {}  # memtrace stream number -> torch stream

    def stream(self, n):
        if n == 0:
            return None  # the current (default) stream
        if n not in self.streams:
            self.streams[n] = self.torch.cuda.Stream(device=self.device)
        return self.streams[n]

    def offset(self, ptr):
        for seg in self.torch.cuda.memory_snapshot():
            if seg.get("device", self.device) != self.device:
                continue
            base = seg["address"]
            if base <= ptr < base + seg["total_size"]:
                return ptr - base
        raise RuntimeError("gpu_judge: block 0x%x is in no segment of torch.cuda.memory_snapshot()" % ptr)

    def apply(self, op):
        """Runs one operation; returns (error or None, offset or None)."""
        cuda = self.torch.cuda
        kind = op.get("op")
        if kind == "alloc":
            ident, size = op["id"], op["size"]
            if ident in self.live:
                return "duplicate id", None
            if size == 0:  # memtrace: succeeds without touching the allocator
                self.live[ident] = None
                return None, None
            try:
                ptr = cuda.caching_allocator_alloc(size, self.device, self.stream(op.get("stream", 0)))
            except cuda.OutOfMemoryError:
                return "oom", None
            self.live[ident] = ptr
            return None, self.offset(ptr)
        if kind == "free":
            if op["id"] not in self.live:
                return "unknown id", None
            ptr = self.live.pop(op["id"])
            if ptr is not None:
                cuda.caching_allocator_delete(ptr)
            return None, None
        if kind == "empty_cache":
            cuda.empty_cache()
            return None, None
        if kind == "reset_peak":
            cuda.reset_peak_memory_stats(self.device)
            return None, None
        if kind == "set_fraction":
            f = op["fraction"]
            if not (isinstance(f, (int, float)) and 0 <= f <= 1):
                return "invalid fraction", None
            cuda.set_per_process_memory_fraction(f, self.device)
            return None, None
        return "bad op", None

    def stats(self):
        s = self.torch.cuda.memory_stats(self.device)
        return {k: s[k] for k in STAT_KEYS if k in s}

    def replay(self, ops):
        cuda = self.torch.cuda
        cuda.synchronize(self.device)
        cuda.empty_cache()
        cuda.reset_peak_memory_stats(self.device)
        cuda.reset_accumulated_memory_stats(self.device)
        out = []
        for i, op in enumerate(ops):
            err, off = self.apply(op)
            out.append({"i": i, "ok": err is None, "error": err, "offset": off, "stats": self.stats()})
        for ptr in self.live.values():  # leave the allocator as found
            if ptr is not None:
                cuda.caching_allocator_delete(ptr)
        self.live.clear()
        cuda.empty_cache()
        return out


def compare(expected, got, expected_name="expected", got_name="got"):
    """Compares two lists of memtrace output lines. Returns a dict with
    "differences" (the first MAX_LISTED, as strings), "count" (all of them),
    "lines" and "unavailable" (statistics only one side reports)."""
    diffs = []
    unavailable = set()

    def differ(msg):
        diffs.append(msg)

    if len(expected) != len(got):
        differ("%d lines in %s, %d in %s" % (len(expected), expected_name, len(got), got_name))
    for e, g in zip(expected, got):
        i = e.get("i")
        if "name" in e:  # a model step's point (gpu_judge_models.py)
            i = "%s (%s)" % (i, e["name"])
        for field in ("name", "ok", "error", "offset"):
            if e.get(field) != g.get(field):
                differ("line %s: %s %s=%r, %s %r" % (i, field, expected_name, e.get(field), got_name, g.get(field)))
        es, gs = e.get("stats") or {}, g.get("stats") or {}
        for k in sorted(set(es) | set(gs)):
            if k not in es or k not in gs:
                unavailable.add(k)
            elif es[k] != gs[k]:
                differ("line %s: %s %s=%d, %s %d" % (i, k, expected_name, es[k], got_name, gs[k]))
    return {
        "lines": len(expected),
        "count": len(diffs),
        "differences": diffs[:MAX_LISTED],
        "unavailable": sorted(unavailable),
    }


def main(argv=None, torch_module=None):
    p = argparse.ArgumentParser(prog="gpu_judge.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("replay", help="replay a trace through PyTorch's allocator on cuda:0")
    r.add_argument("trace")
    r.add_argument("out")
    c = sub.add_parser("compare", help="compare two outputs; exit 1 on any difference")
    c.add_argument("expected")
    c.add_argument("got")
    c.add_argument("--json", help="also write the comparison to this file")
    c.add_argument("--names", default="gpukit,torch", help="names of the two sides in messages")
    args = p.parse_args(argv)

    if args.cmd == "replay":
        torch = torch_module
        if torch is None:
            import torch  # noqa: F401 (only replay needs PyTorch)
        if not torch.cuda.is_available():
            print("gpu_judge: torch.cuda.is_available() is False: no GPU for PyTorch", file=sys.stderr)
            return 1
        out = Replayer(torch).replay(read_jsonl(args.trace))
        write_json_atomic(args.out, out, lines=True)
        return 0

    names = args.names.split(",", 1) + ["got"]
    res = compare(read_jsonl(args.expected), read_jsonl(args.got), names[0], names[1])
    res.update({"expected": args.expected, "got": args.got})
    if args.json:
        write_json_atomic(args.json, res)
    if res["count"]:
        print("gpu_judge: %s and %s differ in %d place(s) over %d lines:" % (args.expected, args.got, res["count"], res["lines"]), file=sys.stderr)
        for d in res["differences"]:
            print("  " + d, file=sys.stderr)
        return 1
    print("gpu_judge: %s and %s agree on %d lines%s" % (
        args.expected, args.got, res["lines"],
        " (not compared, one side lacks them: %s)" % ", ".join(res["unavailable"]) if res["unavailable"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
