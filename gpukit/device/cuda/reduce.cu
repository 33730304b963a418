// Reductions of the cuda backend, compiled at run time by NVRTC (see
// source.go). src is a contiguous array viewed as [outer, n, inner]; each of
// the outer*inner lines src[o, :, j] is reduced into dst[o*inner + j] (and,
// for ARG, its position into index[o*inner + j]). dtype.cuh comes first;
// the Go side prepends:
//
//   T                         storage type (gk_float32_t, gk_float16_t, ...)
//   TW, LOAD_T(x), STORE_T(v) the type T loads as (float or double) and
//                             dtype.cuh's gk_load_NAME and gk_store_NAME
//   REDUCE_SUM, REDUCE_MEAN, REDUCE_MAX, REDUCE_MIN, REDUCE_ARGMAX or REDUCE_ARGMIN
//   BLOCK                     threads per block (a power of two)
//   GO_SIZEOF_ARGS            sizeof the Go reduceArgs
//
// Semantics follow gpukit/kernels and cpucompute: sums accumulate in double
// (rounded once into T; a 16-bit T through float32, as cpucompute); Max and Min
// are NaN when the line holds a NaN; ArgMax/ArgMin pick the lowest index on
// ties and the first NaN over any number; an empty line gives 0 (sum), NaN
// (mean), -Inf (max), +Inf (min) and index -1.
//
// Two kernels: reduce_rows (inner == 1: one block per line, the threads
// stride along the line and combine in shared memory) and reduce_cols
// (inner > 1: one thread per line, neighbouring threads read neighbouring
// columns, so the loads coalesce).

struct Args {
    unsigned long long dst, index, src; // index: long long[], ARG only
    long long outer, n, inner;
};

static_assert(sizeof(Args) == GO_SIZEOF_ARGS, "Args does not match the Go reduceArgs");

#define GPUKIT_INF __longlong_as_double(0x7ff0000000000000ULL)

#if defined(REDUCE_SUM) || defined(REDUCE_MEAN)
typedef double Acc;
__device__ __forceinline__ Acc identity() { return 0.0; }
__device__ __forceinline__ Acc combine(Acc a, Acc b) { return a + b; }
#elif defined(REDUCE_MAX) || defined(REDUCE_MIN)
typedef TW Acc;
#if defined(REDUCE_MAX)
__device__ __forceinline__ Acc identity() { return (TW)(-GPUKIT_INF); }
__device__ __forceinline__ Acc combine(Acc a, Acc b) { return (a != a || b != b) ? (a + b) : (a > b ? a : b); }
#else
__device__ __forceinline__ Acc identity() { return (TW)GPUKIT_INF; }
__device__ __forceinline__ Acc combine(Acc a, Acc b) { return (a != a || b != b) ? (a + b) : (a < b ? a : b); }
#endif
#elif defined(REDUCE_ARGMAX) || defined(REDUCE_ARGMIN)
#define ARG 1
struct Acc {
    TW v;
    long long i; // -1: empty
};
__device__ __forceinline__ Acc identity() { Acc a; a.v = (TW)0; a.i = -1; return a; }
// combine is commutative and associative, so the block-wide tree gives the
// same answer as the sequential scan of kernels.ArgMax.
__device__ __forceinline__ Acc combine(Acc a, Acc b) {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    bool an = a.v != a.v, bn = b.v != b.v;
    if (an || bn) {
        if (an && bn) return a.i < b.i ? a : b;
        return an ? a : b;
    }
#if defined(REDUCE_ARGMAX)
    if (a.v > b.v) return a;
    if (b.v > a.v) return b;
#else
    if (a.v < b.v) return a;
    if (b.v < a.v) return b;
#endif
    return a.i < b.i ? a : b;
}
#else
#error "no reduction selected"
#endif

__device__ __forceinline__ Acc element(const T *src, long long at, long long p) {
#if defined(ARG)
    Acc a; a.v = LOAD_T(src[at]); a.i = p; return a;
#else
    return (Acc)LOAD_T(src[at]);
#endif
}

__device__ __forceinline__ void store(const Args &args, long long line, Acc acc) {
    T *dst = (T *)args.dst;
#if defined(ARG)
    ((long long *)args.index)[line] = acc.i;
    dst[line] = STORE_T(acc.v);
#elif defined(REDUCE_MEAN)
    dst[line] = STORE_T(acc / (double)args.n); // 0/0 = NaN for an empty line
#else
    dst[line] = STORE_T(acc);
#endif
}

extern "C" __global__ void reduce_rows(const Args args) {
    __shared__ Acc part[BLOCK];
    const T *src = (const T *)args.src;
    for (long long o = blockIdx.x; o < args.outer; o += gridDim.x) {
        Acc acc = identity();
        for (long long p = threadIdx.x; p < args.n; p += BLOCK) {
            acc = combine(acc, element(src, o * args.n + p, p));
        }
        part[threadIdx.x] = acc;
        __syncthreads();
        for (int w = BLOCK / 2; w > 0; w /= 2) {
            if (threadIdx.x < w) part[threadIdx.x] = combine(part[threadIdx.x], part[threadIdx.x + w]);
            __syncthreads();
        }
        if (threadIdx.x == 0) store(args, o, part[0]);
        __syncthreads();
    }
}

extern "C" __global__ void reduce_cols(const Args args) {
    const T *src = (const T *)args.src;
    long long lines = args.outer * args.inner;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < lines; t += (long long)gridDim.x * blockDim.x) {
        long long o = t / args.inner, j = t % args.inner;
        long long base = o * args.n * args.inner + j;
        Acc acc = identity();
        for (long long p = 0; p < args.n; p++) {
            acc = combine(acc, element(src, base + p * args.inner, p));
        }
        store(args, t, acc);
    }
}
