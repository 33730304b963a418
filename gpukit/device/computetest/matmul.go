package computetest

import (
	"fmt"
	"testing"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/kernels"
)

// The products: Gemm, GemmBatched and the sparse CSR products.

// matRef is alpha·op(A)·op(B) + beta·C in float64 (row-major, leading
// dimensions as stored).
func matRef(ta, tb bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			var sum float64
			for p := range k {
				var x, y float64
				if ta {
					x = a[p*lda+i]
				} else {
					x = a[i*lda+p]
				}
				if tb {
					y = b[j*ldb+p]
				} else {
					y = b[p*ldb+j]
				}
				sum += x * y
			}
			out[i*n+j] = alpha*sum + beta*c[i*ldc+j]
		}
	}
	return out
}

func testGemm(t *testing.T, s *suite) {
	const m, n, k = 3, 4, 5
	for _, dt := range Dtypes {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				for _, ab := range [][2]float64{{1, 0}, {0.5, 2}} {
					if ab[1] != 0 && dt != dtypes.Float32 && dt != dtypes.Float64 {
						continue // alpha and beta: the float types of BLAS
					}
					lda, ldb, ldc := k+1, n+2, n+1 // padded rows
					if ta {
						lda = m + 1
					}
					if tb {
						ldb = k + 2
					}
					ra, rb := m, k
					if ta {
						ra = k
					}
					if tb {
						rb = n
					}
					av, bv, cv := s.random(dt, ra*lda), s.random(dt, rb*ldb), s.random(dt, m*ldc)
					a, b, c := s.upload(dt, av), s.upload(dt, bv), s.upload(dt, cv)
					if !s.ok("Gemm", dt, s.c.Gemm(stream, dt, ta, tb, m, n, k, ab[0], a, lda, b, ldb, ab[1], c, ldc)) {
						continue
					}
					want := matRef(ta, tb, m, n, k, ab[0], av, lda, bv, ldb, ab[1], cv, ldc)
					all := s.download(dt, c, m*ldc)
					got := make([]float64, m*n)
					for i := range m {
						copy(got[i*n:(i+1)*n], all[i*ldc:])
						for j := n; j < ldc; j++ {
							if all[i*ldc+j] != cv[i*ldc+j] {
								t.Errorf("Gemm %s: wrote C's padding at row %d", dt, i)
							}
						}
					}
					s.check(fmt.Sprintf("Gemm transA=%v transB=%v alpha=%v beta=%v", ta, tb, ab[0], ab[1]), dt, got, want)
				}
			}
		}
	}
}

func testGemmBatched(t *testing.T, s *suite) {
	const m, n, k, batch = 3, 4, 5, 3
	for _, dt := range Dtypes {
		// A broadcast (one matrix for every product), B and C batched.
		av, bv := s.random(dt, m*k), s.random(dt, batch*k*n)
		a, b := s.upload(dt, av), s.upload(dt, bv)
		c := s.upload(dt, make([]float64, batch*m*n))
		size := uint64(dt.Size())
		var as, bs, cs []uint64
		for i := range batch {
			as = append(as, a)
			bs = append(bs, b+uint64(i*k*n)*size)
			cs = append(cs, c+uint64(i*m*n)*size)
		}
		if !s.ok("GemmBatched", dt, s.c.GemmBatched(stream, dt, false, false, m, n, k, 1, as, k, bs, n, 0, cs, n)) {
			continue
		}
		var want []float64
		for i := range batch {
			want = append(want, matRef(false, false, m, n, k, 1, av, k, bv[i*k*n:], n, 0, make([]float64, m*n), n)...)
		}
		s.check("GemmBatched", dt, s.download(dt, c, batch*m*n), want)
	}
}

// csrCase is a random rows×cols CSR pattern: each row has 0 to 3 entries
// in distinct increasing columns, and rows 0 and 3 (when there) none.
func (s *suite) csrCase(rows, cols int) (offs, colIdx []float64) {
	offs = []float64{0}
	for r := range rows {
		var row []float64
		if r != 0 && r != 3 {
			for c := range cols {
				if len(row) < 3 && s.rng.IntN(2) == 0 {
					row = append(row, float64(c))
				}
			}
		}
		colIdx = append(colIdx, row...)
		offs = append(offs, float64(len(colIdx)))
	}
	return offs, colIdx
}

// testCSR checks CSRMatmul, CSRMatmulT and CSRSampledDot against
// gpukit/kernels in the dtype itself, bit for bit (the summation order is
// part of their contract), with both index dtypes, an output that starts
// as garbage (it is overwritten), and a matrix with no entries at all.
func testCSR(t *testing.T, s *suite) {
	for _, dt := range []dtypes.Dtype{dtypes.Float32, dtypes.Float64} {
		for _, idt := range []dtypes.Dtype{dtypes.Int64, dtypes.Int32} {
			for _, sz := range []struct{ rows, cols, n int }{{7, 5, 3}, {2, 4, 0}, {3, 4, 2}} {
				offs, colIdx := s.csrCase(sz.rows, sz.cols)
				if sz.rows == 3 { // no entries at all
					offs, colIdx = []float64{0, 0, 0, 0}, nil
				}
				nnz, n := len(colIdx), sz.n
				vals := s.random(dt, nnz)
				b, g := s.random(dt, sz.cols*n), s.random(dt, sz.rows*n)
				a := backend.CSR{Values: s.upload(dt, vals), ColIndices: s.upload(idt, colIdx), RowOffsets: s.upload(idt, offs),
					Index: idt, Rows: sz.rows, Cols: sz.cols, NNZ: nnz}
				db, dg := s.upload(dt, b), s.upload(dt, g)
				what := fmt.Sprintf("%d×%d (%d entries) n %d index %s", sz.rows, sz.cols, nnz, n, idt)
				var want [3][]float64
				if dt == dtypes.Float32 {
					want = csrWant[float32](vals, colIdx, offs, b, g, n)
				} else {
					want = csrWant[float64](vals, colIdx, offs, b, g, n)
				}
				for i, m := range []string{"CSRMatmul", "CSRMatmulT", "CSRSampledDot"} {
					out := s.upload(dt, s.random(dt, len(want[i])))
					var err error
					switch i {
					case 0:
						err = s.c.CSRMatmul(stream, dt, a, db, out, n)
					case 1:
						err = s.c.CSRMatmulT(stream, dt, a, dg, out, n)
					default:
						err = s.c.CSRSampledDot(stream, dt, a, dg, db, out, n)
					}
					if s.ok(m, dt, err) {
						s.checkTol(m+" "+what, dt, s.download(dt, out, len(want[i])), want[i], 0)
					}
				}
			}
		}
	}
}

// csrWant computes the three products with gpukit/kernels in F.
func csrWant[F float32 | float64](vals, colIdx, offs, b, g []float64, n int) [3][]float64 {
	conv := func(v []float64) []F {
		out := make([]F, len(v))
		for i, x := range v {
			out[i] = F(x)
		}
		return out
	}
	ints := func(v []float64) []int64 {
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = int64(x)
		}
		return out
	}
	rows, cols := len(offs)-1, len(b)/max(n, 1)
	if n == 0 {
		cols = 0
	}
	v, ci, of, bb, gg := conv(vals), ints(colIdx), ints(offs), conv(b), conv(g)
	mm, mt, sd := make([]F, rows*n), make([]F, cols*n), make([]F, len(vals))
	kernels.CSRMatmul(v, ci, of, bb, n, mm)
	kernels.CSRMatmulT(v, ci, of, gg, n, mt)
	kernels.CSRSampledDot(ci, of, gg, bb, n, sd)
	back := func(x []F) []float64 {
		out := make([]float64, len(x))
		for i, y := range x {
			out[i] = float64(y)
		}
		return out
	}
	return [3][]float64{back(mm), back(mt), back(sd)}
}
