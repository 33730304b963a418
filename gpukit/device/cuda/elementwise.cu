// Elementwise kernels of the cuda backend, compiled at run time by NVRTC
// (see source.go). layout.cuh (struct Layout, offsets, GRID_STRIDE) and
// dtype.cuh (the element types, gk_load_NAME and gk_store_NAME) come
// first; the Go side prepends #defines that select one family:
//
//   KERNEL_CONVERT   fill and the copies into TOUT:
//                    entries fill and copy_from_NAME, one per source dtype
//   KERNEL_UNARY     every unary op on TIN, as unary_OP (TOUT = TIN)
//   KERNEL_BINARY    every binary op on TIN, as binary_OP; TOUT is TIN, or
//                    gk_bool_t for the comparisons alone
//   KERNEL_WHERE     where: out = cond ? a : b, T any storage type
//   KERNEL_IN_RANGE  in_range: the bool out = lo <= a <= hi, TIN any
//
// with TOUT, TIN (storage types), TC (the type the ops compute in: float
// for float32 and the 16-bit floats, double otherwise), LOAD_IN(x) and
// STORE_OUT(v) (gk_load_NAME and gk_store_NAME of the operands' dtypes),
// and GO_SIZEOF_ARGS and GO_ARGS_LAYOUT (the Go elementwiseArgs' size and
// field offsets). The Go side then appends the ops: UNARY(name, expr of x)
// and BINARY(name, expr of a and b), each a device function and its entry
// point. Operands are N-d strided views (up to MAX_DIMS dimensions after
// the Go side has merged those contiguous in every operand); operand 0 is
// out, then a, b, c in order.

struct Args {
    unsigned long long out, a, b, c; // device addresses of the first elements
    long long n;                     // number of elements
    double scalar;                   // Fill's value, BinaryScalar's scalar, InRange's lo
    double scalar2;                  // InRange's hi
    long long scalar_mode;           // 0: b is a tensor, 1: b is scalar, 2: a is scalar
    Layout l;
};

static_assert(sizeof(Args) == GO_SIZEOF_ARGS, "Args does not match the Go elementwiseArgs");
GO_ARGS_LAYOUT

#if defined(KERNEL_CONVERT)
extern "C" __global__ void fill(const Args args) {
    TOUT *out = (TOUT *)args.out;
    TOUT v = STORE_OUT(args.scalar);
    GRID_STRIDE(i, args.n) {
        long long off[MAX_OPERANDS];
        offsets<1>(args.l, i, off);
        out[off[0]] = v;
    }
}

// COPY_FROM(NAME) converts a NAME operand through the type it loads as;
// COPY_SAME(NAME) moves the bits of an operand of out's dtype (NaN
// payloads and bool bytes other than 0 and 1 included, as the CPU's copy).
#define COPY_FROM(NAME)                                                   \
    extern "C" __global__ void copy_from_##NAME(const Args args) {        \
        TOUT *out = (TOUT *)args.out;                                     \
        const gk_##NAME##_t *a = (const gk_##NAME##_t *)args.a;           \
        GRID_STRIDE(i, args.n) {                                          \
            long long off[MAX_OPERANDS];                                  \
            offsets<2>(args.l, i, off);                                   \
            out[off[0]] = STORE_OUT(gk_load_##NAME(a[off[1]]));           \
        }                                                                 \
    }
#define COPY_SAME(NAME)                                                   \
    extern "C" __global__ void copy_from_##NAME(const Args args) {        \
        TOUT *out = (TOUT *)args.out;                                     \
        const TOUT *a = (const TOUT *)args.a;                             \
        GRID_STRIDE(i, args.n) {                                          \
            long long off[MAX_OPERANDS];                                  \
            offsets<2>(args.l, i, off);                                   \
            out[off[0]] = a[off[1]];                                      \
        }                                                                 \
    }
#endif

#if defined(KERNEL_UNARY) || defined(KERNEL_BINARY)
#define GK_SQRT1_2 0.70710678118654752440      // 1/√2
#define GK_INV_SQRT_2PI 0.39894228040143267794 // 1/√(2π)
#define GK_BETA2 1.5957691216057307            // 2·√(2/π)
#define GK_KAPPA 0.044715

// gk_sigmoid is 1/(1+e⁻ˣ): 0 rather than NaN where e⁻ˣ overflows.
__device__ __forceinline__ TC gk_sigmoid(TC x) { return (TC)1 / ((TC)1 + exp(-x)); }

// gk_gelu_tanh is GELU's tanh form, ½x(1 + tanh u) = x·σ(2u) with
// 2u = 2√(2/π)(x + 0.044715x³), as gpukit/kernels' geluTanh.
__device__ __forceinline__ TC gk_gelu_tanh(TC x) {
    return x * gk_sigmoid((TC)GK_BETA2 * (x + (TC)GK_KAPPA * x * x * x));
}

// gk_gelu_tanh_grad is σ + x·σ·(1−σ)·2u' of σ = σ(2u), x first clamped
// to ±10⁴ (where σ is exactly 0 or 1) so that ±Inf give 0 and 1 rather
// than NaN, as gpukit/kernels' geluTanhGrad.
__device__ __forceinline__ TC gk_gelu_tanh_grad(TC x) {
    if (x < (TC)-1e4) x = (TC)-1e4;
    if (x > (TC)1e4) x = (TC)1e4;
    TC v = (TC)GK_BETA2 * (x + (TC)GK_KAPPA * x * x * x);
    TC s = gk_sigmoid(v), sm = gk_sigmoid(-v);
    TC du = (TC)GK_BETA2 * ((TC)1 + (TC)(3 * GK_KAPPA) * x * x);
    return fma((x * du) * s, sm, s);
}
#endif

#if defined(KERNEL_UNARY)
template <TC (*F)(TC)>
__device__ __forceinline__ void unary_body(const Args &args) {
    TOUT *out = (TOUT *)args.out;
    const TIN *a = (const TIN *)args.a;
    GRID_STRIDE(i, args.n) {
        long long off[MAX_OPERANDS];
        offsets<2>(args.l, i, off);
        out[off[0]] = STORE_OUT(F(LOAD_IN(a[off[1]])));
    }
}

#define UNARY(NAME, EXPR)                                                     \
    __device__ __forceinline__ TC op_##NAME(TC x) { return (EXPR); }          \
    extern "C" __global__ void unary_##NAME(const Args args) { unary_body<op_##NAME>(args); }
#endif

#if defined(KERNEL_BINARY)
// The scalar is rounded to TC first (a float32 tensor meets float32(s)),
// as gpukit/kernels' BinaryScalar.
template <TC (*F)(TC, TC)>
__device__ __forceinline__ void binary_body(const Args &args) {
    TOUT *out = (TOUT *)args.out;
    const TIN *a = (const TIN *)args.a;
    const TIN *b = (const TIN *)args.b;
    TC s = (TC)args.scalar;
    GRID_STRIDE(i, args.n) {
        long long off[MAX_OPERANDS];
        offsets<3>(args.l, i, off);
        TC x, y;
        if (args.scalar_mode == 0) {
            x = LOAD_IN(a[off[1]]);
            y = LOAD_IN(b[off[2]]);
        } else if (args.scalar_mode == 1) {
            x = LOAD_IN(a[off[1]]);
            y = s;
        } else {
            x = s;
            y = LOAD_IN(a[off[1]]);
        }
        out[off[0]] = STORE_OUT(F(x, y));
    }
}

#define BINARY(NAME, EXPR)                                                    \
    __device__ __forceinline__ TC op_##NAME(TC a, TC b) { return (EXPR); }    \
    extern "C" __global__ void binary_##NAME(const Args args) { binary_body<op_##NAME>(args); }
#endif

#if defined(KERNEL_WHERE)
// where moves elements: T is any type of the dtype's size; cond is bool
// (any byte but 0 selects a).
extern "C" __global__ void where(const Args args) {
    T *out = (T *)args.out;
    const gk_bool_t *cond = (const gk_bool_t *)args.a;
    const T *a = (const T *)args.b;
    const T *b = (const T *)args.c;
    GRID_STRIDE(i, args.n) {
        long long off[MAX_OPERANDS];
        offsets<4>(args.l, i, off);
        out[off[0]] = cond[off[1]] != 0 ? a[off[2]] : b[off[3]];
    }
}
#endif

#if defined(KERNEL_IN_RANGE)
// in_range compares in double, against lo and hi as given (gpukit/tensor's
// clamp backward does); a NaN is in no range.
extern "C" __global__ void in_range(const Args args) {
    gk_bool_t *out = (gk_bool_t *)args.out;
    const TIN *a = (const TIN *)args.a;
    GRID_STRIDE(i, args.n) {
        long long off[MAX_OPERANDS];
        offsets<2>(args.l, i, off);
        double x = (double)LOAD_IN(a[off[1]]);
        out[off[0]] = (x >= args.scalar && x <= args.scalar2) ? 1 : 0;
    }
}
#endif
