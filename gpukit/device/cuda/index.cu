// Gather and scatter-add of the cuda backend, compiled at run time by NVRTC
// (see source.go and rows.go); layout.cuh is prepended. The Go side
// prepends:
//
//   KERNEL_GATHER or KERNEL_SCATTER_ADD   which kernel to compile
//   T                                     the element type (gather moves
//                                         bits: any type of the dtype's size)
//   TINDEX                                the index type (long long, int)
//   GO_SIZEOF_ARGS                        sizeof the Go indexArgs
//   GO_ARGS_LAYOUT                        static_asserts of the field offsets
//
// Operand 0 of the layout is dst, 1 src, 2 index. Index values are trusted:
// the caller has checked that they lie in [0, size of dim).

struct Args {
    unsigned long long dst, src, index;
    long long n;        // gather: elements; scatter-add: lines along dim
    long long line_len; // scatter-add: the index's size along dim
    long long dst_step, src_step, index_step; // strides along dim
    Layout l;
};

static_assert(sizeof(Args) == GO_SIZEOF_ARGS, "Args does not match the Go indexArgs");
GO_ARGS_LAYOUT

#if defined(KERNEL_GATHER)
// gather: one thread per element of the index's shape:
// dst[i] = src[i with i[dim] = index[i]]. The layout's src strides have 0
// along dim; src_step is src's stride there.
extern "C" __global__ void gather(const Args args) {
    T *dst = (T *)args.dst;
    const T *src = (const T *)args.src;
    const TINDEX *index = (const TINDEX *)args.index;
    GRID_STRIDE(i, args.n) {
        long long off[MAX_OPERANDS];
        offsets<3>(args.l, i, off);
        long long j = (long long)index[off[2]];
        dst[off[0]] = src[off[1] + j * args.src_step];
    }
}
#endif

#if defined(KERNEL_SCATTER_ADD)
// scatter_add: one thread per line of the index along dim (the layout is
// the index's shape with dim set to 1). Two lines write disjoint lines of
// dst, and each thread adds its line's elements in order along dim, so
// the result is deterministic and every dst element receives its addends
// in the order of gpukit/tensor's scatterAddKernel, with no atomics.
extern "C" __global__ void scatter_add(const Args args) {
    T *dst = (T *)args.dst;
    const T *src = (const T *)args.src;
    const TINDEX *index = (const TINDEX *)args.index;
    GRID_STRIDE(i, args.n) {
        long long off[MAX_OPERANDS];
        offsets<3>(args.l, i, off);
        for (long long k = 0; k < args.line_len; k++) {
            long long j = (long long)index[off[2] + k * args.index_step];
            long long at = off[0] + j * args.dst_step;
            dst[at] = dst[at] + src[off[1] + k * args.src_step];
        }
    }
}
#endif
