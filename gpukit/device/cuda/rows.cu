// The fused row kernels of the cuda backend (softmax, LayerNorm, BatchNorm,
// NLL loss, Adam) and the sparse CSR products, compiled at run time by
// NVRTC (see source.go and rows.go). The Go side prepends:
//
//   KERNEL_SOFTMAX, KERNEL_LOG_SOFTMAX, KERNEL_LAYER_NORM,
//   KERNEL_LAYER_NORM_BACKWARD, KERNEL_BATCH_NORM, KERNEL_BATCH_NORM_BACKWARD,
//   KERNEL_NLL_LOSS, KERNEL_ADAM or KERNEL_CSR
//                                    which kernel(s) to compile
//   T                                the element type (float, double)
//   COLS                             LayerNorm backward's columns per block
//   TINDEX                           NLL's target type, the CSR's index
//                                    type (long long, int)
//   BLOCK                            threads per block (a power of two)
//   GO_SIZEOF_ARGS                   sizeof the Go twin of the kernel's Args
//   GO_ARGS_LAYOUT, GO_VEC_LAYOUT    static_asserts that every field of Args
//                                    (and Vec) is at its Go twin's offset
//
// The semantics are those of the CPU kernels sim uses (gpukit/kernels
// rows.go and adam.go, gpukit/tensor ops_norm.go and ops_nn.go), operation
// by operation: the programs are compiled with --fmad=false, so a*b + c is
// two roundings as in Go, and an explicit fma() is one, as in
// kernels.normRow32. Sums accumulate in double. What differs from the CPU
// is the order of the sums: each thread sums a strided part of its row (or
// channel, or column) and the block combines the parts in a fixed tree, so
// a result does not depend on the scheduling but is not bitwise the CPU's
// eight-lane sum (see doc.go for the tolerances).
//
// Every kernel assumes blockDim.x == BLOCK and loops over its rows (or
// channels, or column tiles) from blockIdx.x in steps of gridDim.x.

#define GPUKIT_INF __longlong_as_double(0x7ff0000000000000ULL)

// block_sum returns, in every thread, the sum of v over the block: the
// fixed tree part[t] += part[t + w] for w = BLOCK/2, ..., 1.
__device__ double block_sum(double v, double *part) {
    part[threadIdx.x] = v;
    __syncthreads();
    for (int w = BLOCK / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    double r = part[0];
    __syncthreads(); // part may be reused at once
    return r;
}

// nan_max is Go's max: NaN when either is NaN.
template <typename A>
__device__ __forceinline__ A nan_max(A a, A b) {
    return (a != a || b != b) ? a + b : (a > b ? a : b);
}

// A per-channel vector of BatchNorm (struct Vec of the Go side): its own
// element type and stride; addr 0 when absent.
struct Vec {
    unsigned long long addr;
    long long stride;
    long long is_double; // 0: float, 1: double
};
GO_VEC_LAYOUT

__device__ __forceinline__ double vec_load(const Vec &v, long long j, double absent) {
    if (v.addr == 0) return absent;
    if (v.is_double) return ((const double *)v.addr)[j * v.stride];
    return (double)((const float *)v.addr)[j * v.stride];
}

__device__ __forceinline__ void vec_store(const Vec &v, long long j, double x) {
    if (v.addr == 0) return;
    if (v.is_double) ((double *)v.addr)[j * v.stride] = x;
    else ((float *)v.addr)[j * v.stride] = (float)x;
}

#if defined(KERNEL_SOFTMAX) || defined(KERNEL_LOG_SOFTMAX)
struct Args {
    unsigned long long dst, src;
    long long rows, n;
};
static_assert(sizeof(Args) == GO_SIZEOF_ARGS, "Args does not match the Go softmaxArgs");
GO_ARGS_LAYOUT

// softmax: one block per row. m = max (NaN if any), 0 for an all -Inf row;
// s = Σ e^(x-m) in double; softmax e^(x-m)·(1/s) for float (the CPU's
// float32 path) and e^(x-m)/s for double; log-softmax (x-m) - log s. dst
// may be src: every thread reads and writes only its own elements.
extern "C" __global__ void softmax(const Args args) {
    __shared__ double part[BLOCK];
    __shared__ T tmax[BLOCK];
    const T *src = (const T *)args.src;
    T *dst = (T *)args.dst;
    for (long long r = blockIdx.x; r < args.rows; r += gridDim.x) {
        const T *x = src + r * args.n;
        T *y = dst + r * args.n;
        T m = (T)(-GPUKIT_INF);
        for (long long j = threadIdx.x; j < args.n; j += BLOCK) m = nan_max(m, x[j]);
        tmax[threadIdx.x] = m;
        __syncthreads();
        for (int w = BLOCK / 2; w > 0; w /= 2) {
            if (threadIdx.x < w) tmax[threadIdx.x] = nan_max(tmax[threadIdx.x], tmax[threadIdx.x + w]);
            __syncthreads();
        }
        m = tmax[0];
        __syncthreads();
        if (m == (T)(-GPUKIT_INF)) m = (T)0; // all -Inf: avoid -Inf - -Inf
        double acc = 0;
        for (long long j = threadIdx.x; j < args.n; j += BLOCK) {
            T e = exp(x[j] - m);
#if defined(KERNEL_SOFTMAX)
            y[j] = e; // scaled below; x[j] is not read again
#endif
            acc += (double)e;
        }
        double s = block_sum(acc, part);
#if defined(KERNEL_LOG_SOFTMAX)
        T lse = (T)log(s);
        for (long long j = threadIdx.x; j < args.n; j += BLOCK) y[j] = (x[j] - m) - lse;
#else
        if (sizeof(T) == 4) {
            T scale = (T)(1 / s);
            for (long long j = threadIdx.x; j < args.n; j += BLOCK) y[j] = y[j] * scale;
        } else {
            for (long long j = threadIdx.x; j < args.n; j += BLOCK) y[j] = (T)((double)y[j] / s);
        }
#endif
    }
}
#endif

#if defined(KERNEL_LAYER_NORM)
struct Args {
    unsigned long long y, mean, rstd, x, w, b; // w, b: 0 when absent
    long long rows, n;
    double eps;
};
static_assert(sizeof(Args) == GO_SIZEOF_ARGS, "Args does not match the Go layerNormArgs");
GO_ARGS_LAYOUT

// layer_norm: one block per row, as kernels.LayerNormRows: μ = Σx/n and
// var = Σ(x-μ)²/n in double, rstd = 1/√(var+eps); y = ((x - hi) - lo)·rstd
// with μ = hi + lo in T, then ·w + b (one fma for float, as normRow32).
extern "C" __global__ void layer_norm(const Args args) {
    __shared__ double part[BLOCK];
    const T *x = (const T *)args.x, *w = (const T *)args.w, *b = (const T *)args.b;
    T *y = (T *)args.y;
    long long n = args.n;
    for (long long r = blockIdx.x; r < args.rows; r += gridDim.x) {
        const T *xr = x + r * n;
        T *yr = y + r * n;
        double acc = 0;
        for (long long j = threadIdx.x; j < n; j += BLOCK) acc += (double)xr[j];
        double mu = block_sum(acc, part) / (double)n;
        acc = 0;
        for (long long j = threadIdx.x; j < n; j += BLOCK) {
            double d = (double)xr[j] - mu;
            acc += d * d;
        }
        double var = block_sum(acc, part) / (double)n;
        double rs = 1 / sqrt(var + args.eps);
        if (threadIdx.x == 0) {
            ((T *)args.mean)[r] = (T)mu;
            ((T *)args.rstd)[r] = (T)rs;
        }
        T hi = (T)mu, lo = (T)(mu - (double)hi), rst = (T)rs;
        for (long long j = threadIdx.x; j < n; j += BLOCK) {
            T h = ((xr[j] - hi) - lo) * rst;
            if (w && b) yr[j] = sizeof(T) == 4 ? (T)fma(h, w[j], b[j]) : h * w[j] + b[j];
            else if (w) yr[j] = h * w[j];
            else if (b) yr[j] = h + b[j];
            else yr[j] = h;
        }
    }
}
#endif

#if defined(KERNEL_LAYER_NORM_BACKWARD)
struct Args {
    unsigned long long dx, dw, db, g, x, mean, rstd, w; // dx, dw, db, w: 0 when absent
    long long rows, n;
};
static_assert(sizeof(Args) == GO_SIZEOF_ARGS, "Args does not match the Go layerNormBackwardArgs");
GO_ARGS_LAYOUT

// layer_norm_backward_rows: dx, one block per row, as
// kernels.LayerNormBackwardRows: x̂ = (x-μ)·rstd and ĝ = g·w in T,
// a = Σĝ/n and b = Σĝ·x̂/n in double then T, dx = rstd·((ĝ - a) - x̂·b).
extern "C" __global__ void layer_norm_backward_rows(const Args args) {
    __shared__ double part[BLOCK];
    const T *g = (const T *)args.g, *x = (const T *)args.x, *w = (const T *)args.w;
    T *dx = (T *)args.dx;
    long long n = args.n;
    for (long long r = blockIdx.x; r < args.rows; r += gridDim.x) {
        T mu = ((const T *)args.mean)[r], rs = ((const T *)args.rstd)[r];
        const T *gr = g + r * n, *xr = x + r * n;
        double sg = 0, sgx = 0;
        for (long long j = threadIdx.x; j < n; j += BLOCK) {
            T xh = (xr[j] - mu) * rs;
            T gw = w ? gr[j] * w[j] : gr[j];
            sg += (double)gw;
            sgx += (double)(gw * xh);
        }
        T a = (T)(block_sum(sg, part) / (double)n);
        T b = (T)(block_sum(sgx, part) / (double)n);
        for (long long j = threadIdx.x; j < n; j += BLOCK) {
            T xh = (xr[j] - mu) * rs;
            T gw = w ? gr[j] * w[j] : gr[j];
            dx[r * n + j] = rs * ((gw - a) - xh * b);
        }
    }
}

// COLS (defined by the Go side) columns per block, BLOCK/COLS row groups:
// thread t sums column tile + t%COLS over the rows t/COLS, t/COLS + GROUPS,
// ... in double; the groups are then added in order. A fixed order, no
// atomics.
#define GROUPS (BLOCK / COLS)

// layer_norm_backward_cols: dw = Σ_rows g·x̂ and db = Σ_rows g (either may
// be absent), with g·x̂ rounded to T as the CPU does.
extern "C" __global__ void layer_norm_backward_cols(const Args args) {
    __shared__ double pw[GROUPS][COLS], pb[GROUPS][COLS];
    const T *g = (const T *)args.g, *x = (const T *)args.x;
    const T *mean = (const T *)args.mean, *rstd = (const T *)args.rstd;
    int c = threadIdx.x % COLS, grp = threadIdx.x / COLS;
    long long n = args.n;
    for (long long tile = (long long)blockIdx.x * COLS; tile < n; tile += (long long)gridDim.x * COLS) {
        long long j = tile + c;
        double sw = 0, sb = 0;
        if (j < n) {
            for (long long r = grp; r < args.rows; r += GROUPS) {
                T gv = g[r * n + j];
                T xh = (x[r * n + j] - mean[r]) * rstd[r];
                sw += (double)(gv * xh);
                sb += (double)gv;
            }
        }
        pw[grp][c] = sw;
        pb[grp][c] = sb;
        __syncthreads();
        if (grp == 0 && j < n) {
            for (int k = 1; k < GROUPS; k++) {
                sw += pw[k][c];
                sb += pb[k][c];
            }
            if (args.dw) ((T *)args.dw)[j] = (T)sw;
            if (args.db) ((T *)args.db)[j] = (T)sb;
        }
        __syncthreads();
    }
}
#endif

#if defined(KERNEL_BATCH_NORM) || defined(KERNEL_BATCH_NORM_BACKWARD)
// channel_at is the offset of element q (of Batch·Length) of channel c in
// a contiguous [Batch, Channels, Length] array.
__device__ __forceinline__ long long channel_at(long long q, long long c, long long channels, long long length) {
    long long i = q / length, k = q % length;
    return (i * channels + c) * length + k;
}
#endif

#if defined(KERNEL_BATCH_NORM)
struct Args {
    unsigned long long y, x;
    long long batch, channels, length;
    Vec weight, bias, running_mean, running_var;
    unsigned long long save_mean, save_invstd; // 0: not wanted
    long long stat_double;                     // save_*: 0 float, 1 double
    long long training;
    double momentum, eps;
};
static_assert(sizeof(Args) == GO_SIZEOF_ARGS, "Args does not match the Go batchNormArgs");
GO_ARGS_LAYOUT

// batch_norm: one block per channel, as gpukit/tensor's BatchNorm, all in
// double. Training: μ = Σx/count, var = Σ(x-μ)²/count (biased), saved as μ
// and 1/√(var+eps); running stats, when both are present, become
// (1-momentum)·r + momentum·stat with the variance times count/(count-1).
// Evaluation: μ and var are the running stats. Then
// y = (x-μ)·invstd·w + b.
extern "C" __global__ void batch_norm(const Args args) {
    __shared__ double part[BLOCK];
    const T *x = (const T *)args.x;
    T *y = (T *)args.y;
    long long count = args.batch * args.length;
    for (long long c = blockIdx.x; c < args.channels; c += gridDim.x) {
        double mu, var;
        if (args.training) {
            double acc = 0;
            for (long long q = threadIdx.x; q < count; q += BLOCK) acc += (double)x[channel_at(q, c, args.channels, args.length)];
            mu = block_sum(acc, part) / (double)count;
            acc = 0;
            for (long long q = threadIdx.x; q < count; q += BLOCK) {
                double d = (double)x[channel_at(q, c, args.channels, args.length)] - mu;
                acc += d * d;
            }
            var = block_sum(acc, part) / (double)count;
        } else {
            mu = vec_load(args.running_mean, c, 0);
            var = vec_load(args.running_var, c, 0);
        }
        double invstd = 1 / sqrt(var + args.eps);
        if (args.training && threadIdx.x == 0) {
            if (args.save_mean) {
                if (args.stat_double) ((double *)args.save_mean)[c] = mu;
                else ((float *)args.save_mean)[c] = (float)mu;
            }
            if (args.save_invstd) {
                if (args.stat_double) ((double *)args.save_invstd)[c] = invstd;
                else ((float *)args.save_invstd)[c] = (float)invstd;
            }
            if (args.running_mean.addr && args.running_var.addr) {
                double unbias = (double)count / (double)(count - 1);
                double rm = vec_load(args.running_mean, c, 0), rv = vec_load(args.running_var, c, 0);
                vec_store(args.running_mean, c, (1 - args.momentum) * rm + args.momentum * mu);
                vec_store(args.running_var, c, (1 - args.momentum) * rv + args.momentum * var * unbias);
            }
        }
        double w = vec_load(args.weight, c, 1), b = vec_load(args.bias, c, 0);
        for (long long q = threadIdx.x; q < count; q += BLOCK) {
            long long at = channel_at(q, c, args.channels, args.length);
            y[at] = (T)(((double)x[at] - mu) * invstd * w + b);
        }
    }
}
#endif

#if defined(KERNEL_BATCH_NORM_BACKWARD)
struct Args {
    unsigned long long grad, x, grad_x; // grad_x: 0 when not wanted
    long long batch, channels, length;
    Vec grad_weight, grad_bias, weight, stat1, stat2;
    long long training;
    double eps;
};
static_assert(sizeof(Args) == GO_SIZEOF_ARGS, "Args does not match the Go batchNormBackwardArgs");
GO_ARGS_LAYOUT

// batch_norm_backward: one block per channel, as gpukit/tensor's
// batchNormBackward, in double: sg = Σg, sgx = Σg·(x-μ)·invstd; training
// dx = w·invstd·(g - sg/count - x̂·sgx/count), evaluation dx = w·invstd·g
// (invstd = 1/√(stat2+eps)); dw = sgx, db = sg.
extern "C" __global__ void batch_norm_backward(const Args args) {
    __shared__ double part[BLOCK];
    const T *g = (const T *)args.grad, *x = (const T *)args.x;
    T *dx = (T *)args.grad_x;
    long long count = args.batch * args.length;
    for (long long c = blockIdx.x; c < args.channels; c += gridDim.x) {
        double mu = vec_load(args.stat1, c, 0), invstd = vec_load(args.stat2, c, 0);
        if (!args.training) invstd = 1 / sqrt(invstd + args.eps);
        double w = vec_load(args.weight, c, 1);
        double ag = 0, agx = 0;
        for (long long q = threadIdx.x; q < count; q += BLOCK) {
            long long at = channel_at(q, c, args.channels, args.length);
            double gv = (double)g[at];
            ag += gv;
            agx += gv * ((double)x[at] - mu) * invstd;
        }
        double sg = block_sum(ag, part), sgx = block_sum(agx, part);
        if (threadIdx.x == 0) {
            vec_store(args.grad_weight, c, sgx);
            vec_store(args.grad_bias, c, sg);
        }
        if (dx) {
            for (long long q = threadIdx.x; q < count; q += BLOCK) {
                long long at = channel_at(q, c, args.channels, args.length);
                double gv = (double)g[at];
                if (args.training) {
                    double xh = ((double)x[at] - mu) * invstd;
                    dx[at] = (T)(w * invstd * (gv - sg / (double)count - xh * sgx / (double)count));
                } else {
                    dx[at] = (T)(w * invstd * gv);
                }
            }
        }
    }
}
#endif

#if defined(KERNEL_NLL_LOSS)
struct Args {
    unsigned long long out, log_probs, targets;
    long long rows, n;
};
static_assert(sizeof(Args) == GO_SIZEOF_ARGS, "Args does not match the Go nllArgs");
GO_ARGS_LAYOUT

// nll_loss: one block. The threads fetch BLOCK rows' −log p[i, t[i]] at a
// time into shared memory and thread 0 subtracts them from the sum in row
// order, in double, as gpukit/tensor's CrossEntropy: the same value as the
// CPU's bit for bit. out = sum/rows (NaN for no rows, as PyTorch's mean
// over nothing). A target outside [0, n) makes the loss NaN rather than a
// read out of bounds (the caller checks targets; this is a backstop).
extern "C" __global__ void nll_loss(const Args args) {
    __shared__ double v[BLOCK];
    __shared__ double sum;
    const T *lp = (const T *)args.log_probs;
    const TINDEX *t = (const TINDEX *)args.targets;
    if (threadIdx.x == 0) sum = 0;
    for (long long base = 0; base < args.rows; base += BLOCK) {
        long long i = base + threadIdx.x;
        if (i < args.rows) {
            long long c = (long long)t[i];
            v[threadIdx.x] = (c >= 0 && c < args.n) ? (double)lp[i * args.n + c] : __longlong_as_double(0x7ff8000000000000ULL);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            long long k = args.rows - base < BLOCK ? args.rows - base : BLOCK;
            for (long long j = 0; j < k; j++) sum -= v[j];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) ((T *)args.out)[0] = (T)(sum / (double)args.rows);
}
#endif

#if defined(KERNEL_ADAM)
struct Args {
    unsigned long long p, g, m, v;
    long long n;
    // The scalars as kernels.AdamUpdate computes them on the host, in
    // double; the kernel rounds each to T as the CPU does.
    double decay, beta1, one_minus_beta1, beta2, one_minus_beta2, bc2_sqrt, eps, step_size, weight_decay;
    long long adam_w, l2;
};
static_assert(sizeof(Args) == GO_SIZEOF_ARGS, "Args does not match the Go adamArgs");
GO_ARGS_LAYOUT

// adam: one thread per element (grid-stride), kernels.AdamUpdate's
// operations in its order, each rounded to T (no contraction: --fmad=false;
// division and square root are IEEE, NVRTC's defaults).
extern "C" __global__ void adam(const Args args) {
    T *p = (T *)args.p, *m = (T *)args.m, *v = (T *)args.v;
    const T *g = (const T *)args.g;
    const T decay = (T)args.decay, b1 = (T)args.beta1, c1 = (T)args.one_minus_beta1;
    const T b2 = (T)args.beta2, c2 = (T)args.one_minus_beta2, bc2 = (T)args.bc2_sqrt;
    const T eps = (T)args.eps, step = (T)args.step_size, wd = (T)args.weight_decay;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < args.n; i += (long long)gridDim.x * blockDim.x) {
        T pi = p[i], gi = g[i];
        if (args.adam_w) pi = pi * decay;
        else if (args.l2) gi = pi * wd + gi;
        T mi = m[i] * b1 + gi * c1;
        T vi = v[i] * b2 + (gi * gi) * c2;
        m[i] = mi;
        v[i] = vi;
        T denom = sqrt(vi) / bc2 + eps;
        p[i] = pi - (mi / denom) * step;
    }
}
#endif

#if defined(KERNEL_CSR)
struct Args {
    unsigned long long out, vals, cols, offs, x, y;
    long long rows, k, nnz, n;
};
static_assert(sizeof(Args) == GO_SIZEOF_ARGS, "Args does not match the Go csrArgs");
GO_ARGS_LAYOUT

// The sparse CSR products (torch.sparse.mm and its backward) of a
// rows×k matrix in CSR form (offs: rows+1 row offsets, cols and vals: nnz
// entries) with dense row-major operands n columns wide. Each output
// element is summed by one thread, in T, in the order of gpukit/kernels
// (spmm.go), so the results are the CPU's bit for bit and need no
// atomics. The structure is trusted (the caller checks it); as a backstop
// row offsets are clamped to [0, nnz] and an entry whose column is out of
// range is skipped rather than read out of bounds.

__device__ __forceinline__ long long csr_off(const Args &a, long long r) {
    long long o = (long long)((const TINDEX *)a.offs)[r];
    return o < 0 ? 0 : (o > a.nnz ? a.nnz : o);
}

// csr_matmul: out = a·x (x is k×n, out rows×n); one block per row of a,
// each thread a column j of out, adding vals[e]·x[cols[e], j] over the
// row's entries in order (kernels.CSRMatmul).
extern "C" __global__ void csr_matmul(const Args args) {
    const T *vals = (const T *)args.vals, *x = (const T *)args.x;
    const TINDEX *cols = (const TINDEX *)args.cols;
    T *out = (T *)args.out;
    for (long long r = blockIdx.x; r < args.rows; r += gridDim.x) {
        long long lo = csr_off(args, r), hi = csr_off(args, r + 1);
        for (long long j = threadIdx.x; j < args.n; j += BLOCK) {
            T acc = 0;
            for (long long e = lo; e < hi; e++) {
                long long c = (long long)cols[e];
                if (c >= 0 && c < args.k) acc += vals[e] * x[c * args.n + j];
            }
            out[r * args.n + j] = acc;
        }
    }
}

// csr_matmul_t: out = aᵀ·x (x is rows×n, out k×n); one block per column c
// of a, each thread a column j of out, scanning every entry in CSR order
// (row by row) and adding vals[e]·x[r, j] where cols[e] == c: the order in
// which kernels.CSRMatmulT adds into out[c, j]. The scan reads all of
// offs and cols once per block (the cost of determinism without a
// transposed copy of the pattern).
extern "C" __global__ void csr_matmul_t(const Args args) {
    const T *vals = (const T *)args.vals, *x = (const T *)args.x;
    const TINDEX *cols = (const TINDEX *)args.cols;
    T *out = (T *)args.out;
    for (long long c = blockIdx.x; c < args.k; c += gridDim.x) {
        for (long long j = threadIdx.x; j < args.n; j += BLOCK) {
            T acc = 0;
            for (long long r = 0; r < args.rows; r++) {
                long long lo = csr_off(args, r), hi = csr_off(args, r + 1);
                for (long long e = lo; e < hi; e++) {
                    if ((long long)cols[e] == c) acc += vals[e] * x[r * args.n + j];
                }
            }
            out[c * args.n + j] = acc;
        }
    }
}

// csr_sampled_dot: out[e] = x[r, :]·y[cols[e], :] (x rows×n, y k×n) for
// each entry e of row r; one block per row, one thread per entry, the dot
// product in column order (kernels.CSRSampledDot).
extern "C" __global__ void csr_sampled_dot(const Args args) {
    const T *x = (const T *)args.x, *y = (const T *)args.y;
    const TINDEX *cols = (const TINDEX *)args.cols;
    T *out = (T *)args.out;
    for (long long r = blockIdx.x; r < args.rows; r += gridDim.x) {
        long long lo = csr_off(args, r), hi = csr_off(args, r + 1);
        for (long long e = lo + threadIdx.x; e < hi; e += BLOCK) {
            long long c = (long long)cols[e];
            T s = 0;
            if (c >= 0 && c < args.k) {
                for (long long j = 0; j < args.n; j++) s += x[r * args.n + j] * y[c * args.n + j];
            }
            out[e] = s;
        }
    }
}
#endif
