// The N-d strided layout shared by elementwise.cu and index.cu (source.go
// prepends this file to theirs): the shape and, per operand, the strides of
// a view of at most MAX_DIMS dimensions after the Go side has merged the
// dimensions that are contiguous in every operand (mergeDims).

#define MAX_DIMS 8
#define MAX_OPERANDS 4

struct Layout {
    long long ndim;
    long long shape[MAX_DIMS];
    long long strides[MAX_OPERANDS][MAX_DIMS]; // operand 0: out, then the inputs in order
};

// offsets turns the flat row-major index i into element offsets of the
// first K operands.
template <int K>
__device__ __forceinline__ void offsets(const Layout &l, long long i, long long off[MAX_OPERANDS]) {
    for (int j = 0; j < K; j++) off[j] = 0;
    for (int d = (int)l.ndim - 1; d >= 0; d--) {
        long long size = l.shape[d];
        long long c = i % size;
        i /= size;
        for (int j = 0; j < K; j++) off[j] += c * l.strides[j][d];
    }
}

#define GRID_STRIDE(i, n) \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)

