//go:build cuda || nvrtc

package cuda

// References for the kernels whose CPU versions live in gpukit/tensor (in
// its float64 code, not callable on raw arrays): written as tensor computes
// them, for the emulation tests (nvrtc) and the GPU tests (cuda).

import (
	"math"

	"github.com/gpumem/course/gpukit/kernels"
)

// batchNormRef is gpukit/tensor's BatchNorm on [nb, c, l] in float64.
func batchNormRef(x, w, b, rm, rv []float64, nb, c, l int, training bool, momentum, eps float64) (y, mu, invstd []float64) {
	mu, invstd = make([]float64, c), make([]float64, c)
	count := float64(nb * l)
	if training {
		for i := range nb {
			for j := range c {
				for k := range l {
					mu[j] += x[(i*c+j)*l+k]
				}
			}
		}
		for j := range mu {
			mu[j] /= count
		}
		for i := range nb {
			for j := range c {
				for k := range l {
					d := x[(i*c+j)*l+k] - mu[j]
					invstd[j] += d * d
				}
			}
		}
		for j := range invstd {
			invstd[j] /= count
			rm[j] = (1-momentum)*rm[j] + momentum*mu[j]
			rv[j] = (1-momentum)*rv[j] + momentum*invstd[j]*(count/(count-1))
		}
	} else {
		copy(mu, rm)
		copy(invstd, rv)
	}
	for j := range invstd {
		invstd[j] = 1 / math.Sqrt(invstd[j]+eps)
	}
	y = make([]float64, len(x))
	for i := range nb {
		for j := range c {
			for k := range l {
				at := (i*c+j)*l + k
				y[at] = (x[at]-mu[j])*invstd[j]*w[j] + b[j]
			}
		}
	}
	return y, mu, invstd
}

// batchNormBackwardRef is gpukit/tensor's batchNormBackward in float64.
func batchNormBackwardRef(g, x, w, mu, invstd []float64, nb, c, l int, training bool, eps float64) (dx, dw, db []float64) {
	if !training {
		invstd = append([]float64(nil), invstd...)
		for j := range invstd {
			invstd[j] = 1 / math.Sqrt(invstd[j]+eps)
		}
	}
	dw, db = make([]float64, c), make([]float64, c)
	for i := range nb {
		for j := range c {
			for k := range l {
				at := (i*c+j)*l + k
				db[j] += g[at]
				dw[j] += g[at] * (x[at] - mu[j]) * invstd[j]
			}
		}
	}
	count := float64(nb * l)
	dx = make([]float64, len(x))
	for i := range nb {
		for j := range c {
			for k := range l {
				at := (i*c+j)*l + k
				if training {
					xh := (x[at] - mu[j]) * invstd[j]
					dx[at] = w[j] * invstd[j] * (g[at] - db[j]/count - xh*dw[j]/count)
				} else {
					dx[at] = w[j] * invstd[j] * g[at]
				}
			}
		}
	}
	return dx, dw, db
}

func toF64[T kernels.Float](v []T) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func fromF64[T kernels.Float](v []float64) []T {
	out := make([]T, len(v))
	for i, x := range v {
		out[i] = T(x)
	}
	return out
}
