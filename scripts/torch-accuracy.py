#!/usr/bin/env python3
"""Largest error in ulp of PyTorch's float32 CPU kernels, measured as
gpukit/kernels/vmath_test.go measures gpukit's: against the float64
result, over every STEP-th float32 bit pattern in each function's domain;
normal results in ulp, subnormal ones in units of 2^-149.

    python3 scripts/torch-accuracy.py [STEP]   (default 257)
"""
import sys
import numpy as np
import torch

torch.set_num_threads(2)
STEP = int(sys.argv[1]) if len(sys.argv) > 1 else 257
bits = np.arange(0, 1 << 32, STEP, dtype=np.uint64).astype(np.uint32)
allx = bits.view(np.float32)
allx = allx[np.isfinite(allx)]


def sig64(x):
    return torch.where(x >= 0, 1 / (1 + torch.exp(-x.abs())), torch.exp(-x.abs()) / (1 + torch.exp(-x.abs())))


def gelu64(x):
    return 0.5 * x * torch.erfc(-x / np.sqrt(2))


def gelu_grad64(x):
    return 0.5 * torch.erfc(-x / np.sqrt(2)) + x * torch.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)


def inner64(x):
    return 2 * np.sqrt(2 / np.pi) * (x + 0.044715 * x * x * x)


def gelu_tanh64(x):
    return x * sig64(inner64(x))


def gelu_tanh_grad64(x):
    v = inner64(x)
    s, sm = sig64(v), sig64(-v)
    return s + x * 2 * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * x * x) * s * sm


def grad(f):
    def g(x):
        x = x.clone().requires_grad_(True)
        f(x).sum().backward()
        return x.grad.detach()
    return g


gelu_t = lambda x: torch.nn.functional.gelu(x, approximate="tanh")
cases = [
    ("exp", torch.exp, torch.exp, -np.inf, np.inf, None),
    ("log", torch.log, torch.log, 0, np.inf, None),
    ("sigmoid", torch.sigmoid, sig64, -np.inf, np.inf, None),
    ("tanh", torch.tanh, torch.tanh, -np.inf, np.inf, None),
    ("erf", torch.erf, torch.erf, -np.inf, np.inf, None),
    ("gelu", torch.nn.functional.gelu, gelu64, -13, np.inf, None),
    ("gelu_grad", grad(torch.nn.functional.gelu), gelu_grad64, -13, np.inf,
     lambda x: torch.maximum(0.5 * torch.erfc(-x / np.sqrt(2)), (x * torch.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)).abs())),
    ("gelu_tanh", gelu_t, gelu_tanh64, -5, np.inf, None),
    ("gelu_tanh_grad", grad(gelu_t), gelu_tanh_grad64, -5, np.inf,
     lambda x: torch.maximum(sig64(inner64(x)), (gelu_tanh_grad64(x) - sig64(inner64(x))).abs())),
]


def ulp32(v):
    v = v.abs()
    e = torch.floor(torch.log2(torch.clamp(v, min=2.0**-126)))
    u = torch.pow(2.0, e - 23)
    # log2 can be off by one at powers of two: fix up
    u = torch.where(v < torch.pow(2.0, e), u / 2, u)
    u = torch.where(v >= torch.pow(2.0, e + 1), u * 2, u)
    return torch.where(v < 2.0**-126, torch.full_like(v, 2.0**-149), u)


print(f"torch {torch.__version__}, every {STEP}th float32 bit pattern")
for name, f32, f64, lo, hi, scale in cases:
    x = torch.from_numpy(allx[(allx >= lo) & (allx <= hi)].copy())
    got = f32(x).double()
    want = f64(x.double())
    unit = want if scale is None else scale(x.double())
    same = (got == want.float().double()) | (got.isnan() & want.isnan())
    err = ((got - want).abs() / ulp32(unit))
    err = torch.where(same, torch.zeros_like(err), err)
    err = torch.where(err.isnan(), torch.full_like(err, np.inf), err)
    sub = (want.abs() < 2.0**-126) & (scale is None)
    en = torch.where(sub, torch.zeros_like(err), err)
    es = torch.where(sub, err, torch.zeros_like(err))
    i, j = int(en.argmax()), int(es.argmax())
    print(f"{name:15s} max {float(en[i]):10.3f} ulp at {float(x[i]):.8g}; subnormal results {float(es[j]):.1f}*2^-149 at {float(x[j]):.8g}")
