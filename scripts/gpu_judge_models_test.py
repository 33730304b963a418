#!/usr/bin/env python3
"""Tests of gpu_judge_models.py without a GPU: the recorder's arithmetic
with a fake torch.cuda, and, where PyTorch is installed (Debian's
python3-torch, CPU only: run with /usr/bin/python3), every step on the CPU
and the lesson's GPT built at full size on the meta device. gpukit's side
of the same checks is gpukit/cmd/gpucheck/models_test.go, whose
TestPyTorchBuildsTheSameModels compares the two scripts' points.

    /usr/bin/python3 scripts/gpu_judge_models_test.py
"""

import io
import os
import re
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_judge  # noqa: E402
import gpu_judge_models  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class FakeCuda:
    """The four figures and the calls the recorder makes."""

    def __init__(self):
        self.allocated, self.reserved, self.peak, self.peak_reserved = 1024, 2 << 20, 4096, 2 << 20
        self.calls = []

    def memory_allocated(self, d):
        return self.allocated

    def memory_reserved(self, d):
        return self.reserved

    def max_memory_allocated(self, d):
        return self.peak

    def max_memory_reserved(self, d):
        return self.peak_reserved

    def reset_peak_memory_stats(self, d):
        self.calls.append("reset_peak")
        self.peak, self.peak_reserved = self.allocated, self.reserved

    def synchronize(self, d):
        self.calls.append("synchronize")

    def empty_cache(self):
        self.calls.append("empty_cache")


class FakeTensor:
    def matmul(self, other):
        return self

    def sum(self):
        return self

    def backward(self):
        pass


class FakeTorch:
    def __init__(self):
        self.cuda = FakeCuda()
        self.ones_calls = []

    def ones(self, *shape, **kw):
        self.ones_calls.append((shape, kw))
        return FakeTensor()


class RecorderTest(unittest.TestCase):
    def test_points_are_above_the_base_after_warm_up(self):
        t = FakeTorch()
        rec = gpu_judge_models.Recorder(t, "cuda:0", gpu_judge_models.CudaMemory(t, "cuda:0"))
        self.assertEqual(t.ones_calls, [((1, 1), {"device": "cuda:0", "requires_grad": True})])
        self.assertEqual(t.cuda.calls, ["synchronize", "empty_cache", "reset_peak"], "the warm-up settles the allocator")
        t.cuda.allocated, t.cuda.peak, t.cuda.reserved, t.cuda.peak_reserved = 5120, 9216, 22 << 20, 24 << 20
        rec.mark("layer 1")
        rec.value("parameters", {"count": 7})
        self.assertEqual(rec.lines, [
            {"i": 0, "name": "layer 1", "ok": True, "error": None, "offset": None,
             "stats": {"allocated": 4096, "peak_allocated": 8192, "reserved": 20 << 20, "peak_reserved": 22 << 20}},
            {"i": 1, "name": "parameters", "ok": True, "error": None, "offset": None, "stats": {"count": 7}},
        ])

    def test_unknown_step_names_the_steps(self):
        with self.assertRaisesRegex(SystemExit, "no step 'nope'; the steps are lesson03-autograd-saves"):
            gpu_judge_models.run_step(FakeTorch(), "nope", memory=gpu_judge_models.NoMemory())

    def test_list_is_the_steps(self):
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(gpu_judge_models.main(["list"]), 0)
        self.assertEqual(out.getvalue().split(), gpu_judge_models.STEP_NAMES)
        self.assertEqual(sorted(gpu_judge_models.steps()), sorted(gpu_judge_models.STEP_NAMES))


@unittest.skipIf(torch is None, "no PyTorch: run with /usr/bin/python3 (Debian's python3-torch)")
class TorchOnCPUTest(unittest.TestCase):
    def test_every_step_runs_on_the_cpu(self):
        for name in gpu_judge_models.STEP_NAMES:
            with self.subTest(name):
                lines = gpu_judge_models.run_step(torch, name, "cpu", small=True)
                self.assertGreater(len(lines), 3)
                self.assertEqual([l["i"] for l in lines], list(range(len(lines))))
                self.assertEqual(len({l["name"] for l in lines}), len(lines), "point names are unique")

    def test_the_gpt_is_the_lesson_s(self):
        """The full GPT (on the meta device: no memory, no time) has the
        parameter count lesson 07 prints, and gpukit's layout."""
        with open(os.path.join(ROOT, "lessons", "07-training-budget.md"), encoding="utf-8") as f:
            want = int(re.search(r"parameters: ([0-9]+)", f.read()).group(1))
        model = gpu_judge_models.gpt_classes(torch)(gpu_judge_models.GPT_BIG, False, "meta")
        self.assertEqual(sum(p.numel() for p in model.parameters()), want)
        names = [n for n, _ in model.named_parameters()]
        self.assertIn("blocks.0.attn.in_proj_weight", names)
        self.assertEqual(dict(model.named_parameters())["blocks.0.attn.in_proj_weight"].shape, (3 * 512, 512))
        self.assertIn("blocks.7.mlp.2.bias", names)

    def test_the_gpt_step_keeps_adam_state_twice_the_model(self):
        lines = {l["name"]: l["stats"] for l in gpu_judge_models.run_step(torch, "lesson07-gpt-baseline", "cpu", small=True)}
        self.assertEqual(lines["adam state"]["bytes"], 2 * lines["parameters"]["bytes"])

    def test_compare_fails_on_a_planted_mismatch(self):
        lines = gpu_judge_models.run_step(torch, "lesson03-freezing", "cpu", small=True)
        planted = [dict(l, stats=dict(l["stats"])) for l in lines]
        planted[3]["stats"]["peak_allocated"] += 512
        res = gpu_judge.compare(lines, planted, "torch", "gpukit")
        self.assertEqual(res["count"], 1)
        self.assertIn("line 3 (first 3 of 6: backward): peak_allocated torch=0, gpukit 512", res["differences"])
        renamed = [dict(l) for l in lines]
        renamed[0]["name"] = "other"
        self.assertEqual(gpu_judge.compare(lines, renamed)["count"], 1, "a point under another name is a difference")

        d = tempfile.mkdtemp()
        a, b = os.path.join(d, "torch.jsonl"), os.path.join(d, "cuda.jsonl")
        gpu_judge.write_json_atomic(a, lines, lines=True)
        gpu_judge.write_json_atomic(b, planted, lines=True)
        err = io.StringIO()
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            self.assertEqual(gpu_judge.main(["compare", a, b, "--names", "torch,gpukit"]), 1)
        self.assertIn("first 3 of 6: backward", err.getvalue())

    def test_run_writes_the_lines(self):
        out = os.path.join(tempfile.mkdtemp(), "o.jsonl")
        with redirect_stderr(io.StringIO()):
            code = gpu_judge_models.main(["run", "lesson07-checkpoint-segments", out, "--device", "cpu", "--small"])
        self.assertEqual(code, 0)
        lines = gpu_judge.read_jsonl(out)
        self.assertEqual(lines[0]["name"], "model and input")
        self.assertEqual(set(lines[1]["stats"]), set(gpu_judge_models.MEMORY_STATS))

    def test_cuda_without_a_gpu_says_so(self):
        if torch.cuda.is_available():
            self.skipTest("this machine has a GPU")
        err = io.StringIO()
        with redirect_stderr(err):
            self.assertEqual(gpu_judge_models.main(["run", "lesson03-budget", os.path.join(tempfile.mkdtemp(), "o")]), 1)
        self.assertIn("no GPU", err.getvalue())


if __name__ == "__main__":
    unittest.main()
