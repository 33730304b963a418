package cpucompute

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpumem/course/gpukit/dtypes"
)

// TestHalfGemmIsSequentialFloat32 checks the float16 and bfloat16 product
// bit for bit against its definition: per element, a float32 sum over k in
// order, rounded at every step, then alpha and beta in float64 and the
// store; every transpose, ragged column counts around the four-column
// blocks, and alpha and beta other than 1 and 0.
func TestHalfGemmIsSequentialFloat32(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for _, dt := range []dtypes.Dtype{dtypes.Float16, dtypes.BFloat16} {
		for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 7}, {6, 9, 300}, {2, 4, 0}} {
			for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				for _, ab := range [][2]float64{{1, 0}, {0.5, -2}} {
					m, n, k := sz[0], sz[1], sz[2]
					lda, ldb, ldc := k+1, n+2, n+3
					if tr[0] {
						lda = m + 1
					}
					if tr[1] {
						ldb = k + 2
					}
					fill := func(elems int) []byte {
						b := make([]byte, 2*elems)
						for i := range elems {
							dtypes.Store(dt, b, i, r.NormFloat64())
						}
						return b
					}
					a, b, c := fill(max(m, k)*lda+1), fill(max(k, n)*ldb+1), fill(m*ldc)
					want := append([]byte(nil), c...)
					at := func(trans bool, ld, i, j int) int {
						if trans {
							return j*ld + i
						}
						return i*ld + j
					}
					for i := range m {
						for j := range n {
							var s float64
							for p := range k {
								x, y := dtypes.Load(dt, a, at(tr[0], lda, i, p)), dtypes.Load(dt, b, at(tr[1], ldb, p, j))
								s = float64(float32(s) + float32(x)*float32(y))
							}
							s = ab[0]*s + ab[1]*dtypes.Load(dt, want, i*ldc+j)
							dtypes.Store(dt, want, i*ldc+j, s)
						}
					}
					halfGemm(dt, tr[0], tr[1], m, n, k, ab[0], a, lda, b, ldb, ab[1], c, ldc)
					name := fmt.Sprintf("%v %v %v alpha %g beta %g", dt, sz, tr, ab[0], ab[1])
					for i := range m * ldc {
						if i%ldc >= n {
							continue
						}
						got, w := dtypes.Load(dt, c, i), dtypes.Load(dt, want, i)
						if math.Float64bits(got) != math.Float64bits(w) {
							t.Fatalf("%s: element %d is %v, want %v", name, i, got, w)
						}
					}
				}
			}
		}
	}
}
