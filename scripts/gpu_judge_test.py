#!/usr/bin/env python3
"""Tests of gpu_judge.py that need no GPU and no PyTorch: a fake torch
stands in for torch.cuda. Run: python3 scripts/gpu_judge_test.py"""

import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_judge  # noqa: E402

MiB = 1 << 20


class FakeOOM(Exception):
    pass


class FakeCuda:
    """A one-block-per-segment allocator with PyTorch's rounding (512 B)
    and segment sizes (2 MiB small, 20 MiB large), enough to check that
    the replay calls the right functions and reads the right answers."""

    OutOfMemoryError = FakeOOM

    def __init__(self, capacity=64 * MiB):
        self.capacity = capacity
        self.calls = []
        self.segments = {}  # address -> (total, used)
        self.next = 0x7F0000000000
        self.allocated = self.peak = 0
        self.num_device_alloc = 0
        self.streams = []

    def is_available(self):
        return True

    def Stream(self, device=0):
        s = "stream%d" % (len(self.streams) + 1)
        self.streams.append(s)
        return s

    def caching_allocator_alloc(self, size, device, stream):
        self.calls.append(("alloc", size, stream))
        rounded = (size + 511) // 512 * 512
        seg = 2 * MiB if rounded <= MiB else max(20 * MiB, rounded)
        if sum(t for t, _ in self.segments.values()) + seg > self.capacity:
            raise FakeOOM()
        addr = self.next
        self.next += seg
        self.segments[addr] = (seg, rounded)
        self.num_device_alloc += 1
        self.allocated += rounded
        self.peak = max(self.peak, self.allocated)
        return addr + 0  # each block at offset 0 of its segment

    def caching_allocator_delete(self, ptr):
        self.calls.append(("free", ptr))
        total, used = self.segments.pop(ptr)
        self.allocated -= used

    def memory_snapshot(self):
        return [{"device": 0, "address": a, "total_size": t} for a, (t, _) in self.segments.items()]

    def memory_stats(self, device):
        return {
            "allocated_bytes.all.current": self.allocated,
            "allocated_bytes.all.peak": self.peak,
            "reserved_bytes.all.current": sum(t for t, _ in self.segments.values()),
            "num_device_alloc": self.num_device_alloc,
            "key.gpukit.does.not.write": 1,
        }

    def empty_cache(self):
        self.calls.append(("empty_cache",))

    def reset_peak_memory_stats(self, device=0):
        self.calls.append(("reset_peak",))
        self.peak = self.allocated

    def reset_accumulated_memory_stats(self, device=0):
        self.num_device_alloc = 0

    def set_per_process_memory_fraction(self, f, device=0):
        self.calls.append(("fraction", f))

    def synchronize(self, device=0):
        pass


class FakeTorch:
    def __init__(self, **kw):
        self.cuda = FakeCuda(**kw)


TRACE = [
    {"op": "alloc", "id": "a", "size": 4000000},
    {"op": "alloc", "id": "b", "size": 1000, "stream": 1},
    {"op": "alloc", "id": "z", "size": 0},
    {"op": "free", "id": "a"},
    {"op": "free", "id": "a"},
    {"op": "reset_peak"},
    {"op": "alloc", "id": "big", "size": 70 * MiB},
    {"op": "set_fraction", "fraction": 2},
    {"op": "empty_cache"},
]


class ReplayTest(unittest.TestCase):
    def test_replay_calls_torch_and_reads_its_answers(self):
        torch = FakeTorch()
        out = gpu_judge.Replayer(torch).replay(TRACE)
        self.assertEqual([o["i"] for o in out], list(range(len(TRACE))))
        self.assertEqual([o["error"] for o in out],
                         [None, None, None, None, "unknown id", None, "oom", "invalid fraction", None])
        self.assertEqual(out[0]["offset"], 0)
        self.assertIsNone(out[2]["offset"], "a size-0 allocation has no block")
        self.assertEqual(out[0]["stats"]["allocated_bytes.all.current"], 4000256)
        self.assertEqual(out[1]["stats"]["allocated_bytes.all.current"], 4000256 + 1024)
        self.assertEqual(out[3]["stats"]["allocated_bytes.all.current"], 1024)
        self.assertEqual(out[5]["stats"]["allocated_bytes.all.peak"], 1024, "reset_peak reached torch")
        self.assertNotIn("key.gpukit.does.not.write", out[0]["stats"])
        calls = torch.cuda.calls
        self.assertIn(("alloc", 1000, "stream1"), calls, "stream 1 is a torch stream")
        self.assertIn(("alloc", 4000000, None), calls, "stream 0 is the current stream")
        self.assertNotIn(("alloc", 0, None), calls)
        b = 0x7F0000000000 + 20 * MiB  # "b" follows "a"'s 20 MiB segment
        self.assertEqual(calls[-3:], [("empty_cache",), ("free", b), ("empty_cache",)],
                         "after the trace, the replay frees what it left live and empties the cache")
        self.assertEqual(torch.cuda.segments, {})

    def test_block_outside_every_segment_is_an_error(self):
        torch = FakeTorch()
        torch.cuda.memory_snapshot = lambda: []
        with self.assertRaisesRegex(RuntimeError, "in no segment"):
            gpu_judge.Replayer(torch).replay(TRACE[:1])


def line(i, offset=0, error=None, **stats):
    return {"i": i, "ok": error is None, "error": error, "offset": offset, "stats": stats}


class CompareTest(unittest.TestCase):
    def test_equal_outputs_agree(self):
        a = [line(0, allocated=512), line(1, None, reserved=2 * MiB)]
        res = gpu_judge.compare(a, json.loads(json.dumps(a)))
        self.assertEqual(res["count"], 0)
        self.assertEqual(res["lines"], 2)

    def test_every_kind_of_difference_is_found(self):
        cases = [
            ("offset", [line(0, 0)], [line(0, 512)], "offset"),
            ("error", [line(0)], [line(0, None, "oom")], "error"),
            ("stat", [line(0, allocated=512)], [line(0, allocated=1024)], "allocated gpukit=512, torch 1024"),
            ("length", [line(0), line(1)], [line(0)], "2 lines in gpukit, 1 in torch"),
        ]
        for name, a, b, want in cases:
            with self.subTest(name):
                res = gpu_judge.compare(a, b, "gpukit", "torch")
                self.assertGreater(res["count"], 0)
                self.assertTrue(any(want in d for d in res["differences"]), res["differences"])

    def test_a_statistic_on_one_side_only_is_unavailable_not_different(self):
        res = gpu_judge.compare([line(0, num_device_alloc=1, allocated=512)], [line(0, allocated=512)])
        self.assertEqual(res["count"], 0)
        self.assertEqual(res["unavailable"], ["num_device_alloc"])

    def test_differences_are_counted_beyond_the_listed_ones(self):
        n = gpu_judge.MAX_LISTED + 5
        res = gpu_judge.compare([line(i, 0) for i in range(n)], [line(i, 512) for i in range(n)])
        self.assertEqual(res["count"], n)
        self.assertEqual(len(res["differences"]), gpu_judge.MAX_LISTED)


class MainTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def write(self, name, lines):
        p = os.path.join(self.dir, name)
        with open(p, "w") as f:
            for l in lines:
                f.write(json.dumps(l) + "\n")
        return p

    def run_main(self, argv, torch=None):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = gpu_judge.main(argv, torch_module=torch)
        return code, out.getvalue(), err.getvalue()

    def test_compare_fails_loudly_on_a_mismatch(self):
        a = self.write("a.jsonl", [line(0, allocated=512)])
        b = self.write("b.jsonl", [line(0, allocated=1024)])
        report = os.path.join(self.dir, "cmp.json")
        code, _, err = self.run_main(["compare", a, b, "--json", report])
        self.assertEqual(code, 1)
        self.assertIn("differ in 1 place", err)
        with open(report) as f:
            self.assertEqual(json.load(f)["count"], 1)

    def test_compare_passes_on_agreement(self):
        a = self.write("a.jsonl", [line(0, allocated=512)])
        code, out, _ = self.run_main(["compare", a, a])
        self.assertEqual(code, 0)
        self.assertIn("agree on 1 lines", out)

    def test_replay_writes_memtrace_lines(self):
        trace = self.write("t.jsonl", TRACE[:2])
        out = os.path.join(self.dir, "t.torch.jsonl")
        code, _, _ = self.run_main(["replay", trace, out], torch=FakeTorch())
        self.assertEqual(code, 0)
        lines = gpu_judge.read_jsonl(out)
        self.assertEqual(len(lines), 2)
        self.assertEqual(set(lines[0]), {"i", "ok", "error", "offset", "stats"})
        self.assertEqual([f for f in os.listdir(self.dir) if f.startswith(".gpu_judge.")], [], "no temporary left")

    def test_replay_without_a_gpu_says_so(self):
        torch = FakeTorch()
        torch.cuda.is_available = lambda: False
        code, _, err = self.run_main(["replay", self.write("t.jsonl", TRACE[:1]), os.path.join(self.dir, "o")], torch=torch)
        self.assertEqual(code, 1)
        self.assertIn("no GPU", err)

    def test_output_that_is_not_a_regular_file_is_refused(self):
        a = self.write("a.jsonl", [line(0)])
        os.mkdir(os.path.join(self.dir, "d"))
        with self.assertRaises(SystemExit):
            self.run_main(["compare", a, a, "--json", os.path.join(self.dir, "d")])


if __name__ == "__main__":
    unittest.main()
