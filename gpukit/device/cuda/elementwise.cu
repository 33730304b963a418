// Elementwise kernels of the cuda backend, compiled at run time by NVRTC
// (see source.go). The Go side prepends #defines that select one kernel and
// its types:
//
//   KERNEL_FILL, KERNEL_UNARY or KERNEL_BINARY   which kernel to compile
//   TOUT, TIN                                    element types (float, double)
//   UNARY_OP(x), BINARY_OP(a, b)                 the operation, in TIN
//   GO_SIZEOF_ARGS                               sizeof the Go elementwiseArgs
//
// A copy is KERNEL_UNARY with UNARY_OP(x) = x (and TOUT != TIN to convert).
// Operands are N-d strided views (up to MAX_DIMS dimensions after the Go
// side has merged dimensions that are contiguous for every operand; struct
// Layout, offsets and GRID_STRIDE come from layout.cuh, prepended).

struct Args {
    unsigned long long out, a, b; // device addresses of the first elements
    long long n;                  // number of elements
    double scalar;                // Fill's value, BinaryScalar's scalar
    long long scalar_mode;        // 0: b is a tensor, 1: b is scalar, 2: a is scalar
    Layout l;
};

static_assert(sizeof(Args) == GO_SIZEOF_ARGS, "Args does not match the Go elementwiseArgs");

#if defined(KERNEL_FILL)
extern "C" __global__ void fill(const Args args) {
    TOUT *out = (TOUT *)args.out;
    TOUT v = (TOUT)args.scalar;
    GRID_STRIDE(i, args.n) {
        long long off[3];
        offsets<1>(args.l, i, off);
        out[off[0]] = v;
    }
}
#endif

#if defined(KERNEL_UNARY)
extern "C" __global__ void unary(const Args args) {
    TOUT *out = (TOUT *)args.out;
    const TIN *a = (const TIN *)args.a;
    GRID_STRIDE(i, args.n) {
        long long off[3];
        offsets<2>(args.l, i, off);
        TIN x = a[off[1]];
        out[off[0]] = (TOUT)(UNARY_OP(x));
    }
}
#endif

#if defined(KERNEL_BINARY)
extern "C" __global__ void binary(const Args args) {
    TOUT *out = (TOUT *)args.out;
    const TIN *a = (const TIN *)args.a;
    const TIN *b = (const TIN *)args.b;
    TIN s = (TIN)args.scalar;
    GRID_STRIDE(i, args.n) {
        long long off[3];
        offsets<3>(args.l, i, off);
        TIN x, y;
        if (args.scalar_mode == 0) {
            x = a[off[1]];
            y = b[off[2]];
        } else if (args.scalar_mode == 1) {
            x = a[off[1]];
            y = s;
        } else {
            x = s;
            y = a[off[1]];
        }
        out[off[0]] = (TOUT)(BINARY_OP(x, y));
    }
}
#endif
