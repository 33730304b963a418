// The element types of the elementwise kernels and reductions (source.go
// prepends this file): for each gpukit dtype NAME, its storage type
// gk_NAME_t, gk_load_NAME (storage to the type the kernels compute in:
// float for float32, float16 and bfloat16, double for the others) and
// gk_store_NAME (a computed value to storage). They follow gpukit's CPU
// (cpucompute's Load and Store, gpukit/kernels' dtype helpers) bit for bit:
//
//   - float16 and bfloat16 round to nearest even from float32 (a double is
//     first rounded to float32, as Store does), overflow to ±Inf, underflow
//     gradually to subnormals, and keep NaN a quiet NaN of the same sign;
//     widening them is exact;
//   - int64 and int32 truncate toward zero; NaN and values out of range
//     (undefined in C, implementation-defined in Go) give the minimum
//     integer, as Go's conversion on amd64 (x86's "integer indefinite"),
//     where the GPU's own conversion would saturate;
//   - bool is 1 for any value that is not 0 (NaN included), and loads as 0
//     or 1.
//
// The conversions are written with integer operations rather than
// cuda_fp16.h's intrinsics so that the host compiler of the emulation tests
// runs the very same code.

typedef float gk_float32_t;
typedef double gk_float64_t;
typedef unsigned short gk_float16_t;
typedef unsigned short gk_bfloat16_t;
typedef long long gk_int64_t;
typedef int gk_int32_t;
typedef unsigned char gk_bool_t;

// gk_half_to_float is kernels.Float16ToFloat32.
__device__ __forceinline__ float gk_half_to_float(unsigned short h) {
    unsigned sign = (unsigned)(h & 0x8000u) << 16;
    unsigned exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        float f = (float)man * (1.0f / 16777216.0f); // man · 2⁻²⁴, exact
        return sign ? -f : f;
    }
    return __uint_as_float(sign | ((exp + 127u - 15u) << 23) | (man << 13));
}

// gk_float_to_half is kernels.Float32ToFloat16.
__device__ __forceinline__ unsigned short gk_float_to_half(float f) {
    unsigned b = __float_as_uint(f);
    unsigned sign = (b >> 16) & 0x8000u;
    int exp = (int)((b >> 23) & 0xffu);
    unsigned man = b & 0x7fffffu;
    if (exp == 0xff) return (unsigned short)(sign | (man != 0 ? 0x7e00u : 0x7c00u)); // NaN, ±Inf
    int e = exp - 127 + 15;
    if (e >= 0x1f) return (unsigned short)(sign | 0x7c00u); // overflow
    if (e <= 0) { // a subnormal half, or zero
        if (e < -10) return (unsigned short)sign;
        unsigned m = man | 0x800000u;
        unsigned shift = (unsigned)(14 - e);
        unsigned half = m >> shift, rem = m & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (unsigned short)(sign | half);
    }
    unsigned half = ((unsigned)e << 10) | (man >> 13);
    unsigned rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++; // may carry up to Inf
    return (unsigned short)(sign | half);
}

// gk_float_to_bfloat16 is kernels.Float32ToBFloat16.
__device__ __forceinline__ unsigned short gk_float_to_bfloat16(float f) {
    unsigned b = __float_as_uint(f);
    if ((b & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((b >> 16) | 0x40u);
    b += 0x7fffu + ((b >> 16) & 1u);
    return (unsigned short)(b >> 16);
}

__device__ __forceinline__ float gk_load_float32(gk_float32_t x) { return x; }
__device__ __forceinline__ double gk_load_float64(gk_float64_t x) { return x; }
__device__ __forceinline__ float gk_load_float16(gk_float16_t x) { return gk_half_to_float(x); }
__device__ __forceinline__ float gk_load_bfloat16(gk_bfloat16_t x) { return __uint_as_float((unsigned)x << 16); }
__device__ __forceinline__ double gk_load_int64(gk_int64_t x) { return (double)x; }
__device__ __forceinline__ double gk_load_int32(gk_int32_t x) { return (double)x; }
__device__ __forceinline__ double gk_load_bool(gk_bool_t x) { return x != 0 ? 1.0 : 0.0; }

// The stores take the value in the type it was computed in; a double
// bound for a 16-bit type is rounded to float32 first, as cpucompute's
// Store does.
__device__ __forceinline__ gk_float32_t gk_store_float32(float v) { return v; }
__device__ __forceinline__ gk_float32_t gk_store_float32(double v) { return (float)v; }
__device__ __forceinline__ gk_float64_t gk_store_float64(double v) { return v; }
__device__ __forceinline__ gk_float16_t gk_store_float16(float v) { return gk_float_to_half(v); }
__device__ __forceinline__ gk_float16_t gk_store_float16(double v) { return gk_float_to_half((float)v); }
__device__ __forceinline__ gk_bfloat16_t gk_store_bfloat16(float v) { return gk_float_to_bfloat16(v); }
__device__ __forceinline__ gk_bfloat16_t gk_store_bfloat16(double v) { return gk_float_to_bfloat16((float)v); }
__device__ __forceinline__ gk_int64_t gk_store_int64(double v) {
    return v >= -0x1p63 && v < 0x1p63 ? (long long)v : (long long)(-0x7fffffffffffffffLL - 1);
}
__device__ __forceinline__ gk_int32_t gk_store_int32(double v) {
    return v > -0x1p31 - 1 && v < 0x1p31 ? (int)v : (int)(-0x7fffffff - 1);
}
__device__ __forceinline__ gk_bool_t gk_store_bool(double v) { return v != 0 ? 1 : 0; }
