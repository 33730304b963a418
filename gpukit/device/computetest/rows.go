package computetest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/kernels"
)

// The row kernels: Softmax, LayerNorm and BatchNorm with their backwards,
// and NLLLoss.

func testSoftmax(t *testing.T, s *suite) {
	const rows, n = 3, 7
	for _, dt := range floats {
		for _, log := range []bool{false, true} {
			src := s.random(dt, rows*n)
			a, d := s.upload(dt, src), s.upload(dt, make([]float64, rows*n))
			if !s.ok("Softmax", dt, s.c.Softmax(stream, dt, d, a, rows, n, log)) {
				continue
			}
			want := make([]float64, rows*n)
			kernels.SoftmaxRows(want, src, rows, n, log)
			s.check(fmt.Sprintf("Softmax log=%v", log), dt, s.download(dt, d, rows*n), want)
		}
	}
}

// testSoftmaxStrided takes the softmax of [3, 4] operands of every layout
// along each dimension, into a contiguous or transposed output.
func testSoftmaxStrided(t *testing.T, s *suite) {
	for _, dt := range floats {
		for layout := range layouts {
			for _, dim := range []int{0, 1} {
				for _, log := range []bool{false, true} {
					a, av := s.input(dt, layout)
					d := s.output(dt, dim == 1)
					if !s.ok("SoftmaxStrided", dt, s.c.SoftmaxStrided(stream, shape34, dim, d, a, log)) {
						continue
					}
					// The reference: each line along dim, row-major, by
					// SoftmaxRows on a contiguous copy.
					lines, n := 4, 3
					if dim == 1 {
						lines, n = 3, 4
					}
					src := make([]float64, 12)
					for l := range lines {
						for i := range n {
							k := i*4 + l // dim 0: element (i, l)
							if dim == 1 {
								k = l*4 + i
							}
							src[l*n+i] = av.at(shape34, k)
						}
					}
					rows := make([]float64, 12)
					kernels.SoftmaxRows(rows, src, lines, n, log)
					want := make([]float64, 12) // in d's layout: transposed for dim 1
					for l := range lines {
						for i := range n {
							if dim == 1 {
								want[i*3+l] = rows[l*n+i]
							} else {
								want[i*4+l] = rows[l*n+i]
							}
						}
					}
					s.check(fmt.Sprintf("SoftmaxStrided layout %d dim %d log=%v", layout, dim, log), dt, s.download(dt, d.Addr, 12), want)
				}
			}
		}
	}
}

// statDtype is the dtype of the statistics of a norm over dt.
func statDtype(dt dtypes.Dtype) dtypes.Dtype {
	if dt == dtypes.Float64 {
		return dt
	}
	return dtypes.Float32
}

// opt uploads vals when present, else returns address 0.
func (s *suite) opt(present bool, dt dtypes.Dtype, vals []float64) uint64 {
	if !present {
		return 0
	}
	return s.upload(dt, vals)
}

func testLayerNorm(t *testing.T, s *suite) {
	const rows, n, eps = 3, 8, 1e-5
	for _, dt := range floats {
		st := statDtype(dt)
		for _, affine := range []bool{true, false} {
			xv, wv, bv := s.random(dt, rows*n), s.random(dt, n), s.random(dt, n)
			x := s.upload(dt, xv)
			y, mean, rstd := s.upload(dt, make([]float64, rows*n)), s.upload(st, make([]float64, rows)), s.upload(st, make([]float64, rows))
			w, b := s.opt(affine, dt, wv), s.opt(affine, dt, bv)
			if !s.ok("LayerNorm", dt, s.c.LayerNorm(stream, dt, y, mean, rstd, x, w, b, rows, n, eps)) {
				continue
			}
			wy, wm, wr := make([]float64, rows*n), make([]float64, rows), make([]float64, rows)
			var rw, rb []float64
			if affine {
				rw, rb = wv, bv
			}
			kernels.LayerNormRows(wy, wm, wr, xv, rw, rb, rows, n, eps)
			what := fmt.Sprintf("LayerNorm affine=%v", affine)
			s.check(what+" y", dt, s.download(dt, y, rows*n), wy)
			s.check(what+" mean", st, s.download(st, mean, rows), wm)
			s.checkTol(what+" rstd", st, s.download(st, rstd, rows), wr, max(tol(st), 1e-4))
		}
	}
}

func testLayerNormBackward(t *testing.T, s *suite) {
	const rows, n = 3, 8
	for _, dt := range floats {
		st := statDtype(dt)
		for _, want := range []struct{ dx, dw, db, w bool }{{true, true, true, true}, {true, false, false, false}, {false, true, true, true}} {
			gv, xv, wv := s.random(dt, rows*n), s.random(dt, rows*n), s.random(dt, n)
			mv, rv := make([]float64, rows), make([]float64, rows)
			y := make([]float64, rows*n)
			kernels.LayerNormRows(y, mv, rv, xv, nil, nil, rows, n, 1e-5)
			for i := range mv {
				mv[i], rv[i] = conv(st, mv[i]), conv(st, rv[i])
			}
			g, x, mean, rstd := s.upload(dt, gv), s.upload(dt, xv), s.upload(st, mv), s.upload(st, rv)
			w := s.opt(want.w, dt, wv)
			dx, dw, db := s.opt(want.dx, dt, make([]float64, rows*n)), s.opt(want.dw, dt, make([]float64, n)), s.opt(want.db, dt, make([]float64, n))
			if !s.ok("LayerNormBackward", dt, s.c.LayerNormBackward(stream, dt, dx, dw, db, g, x, mean, rstd, w, rows, n)) {
				continue
			}
			rdx, rdw, rdb := make([]float64, rows*n), make([]float64, n), make([]float64, n)
			var rw []float64
			if want.w {
				rw = wv
			}
			kernels.LayerNormBackwardRows(rdx, rdw, rdb, gv, xv, mv, rv, rw, rows, n)
			what := fmt.Sprintf("LayerNormBackward %+v", want)
			if want.dx {
				s.checkTol(what+" dx", dt, s.download(dt, dx, rows*n), rdx, 4*tol(dt))
			}
			if want.dw {
				s.checkTol(what+" dw", dt, s.download(dt, dw, n), rdw, 4*tol(dt))
			}
			if want.db {
				s.check(what+" db", dt, s.download(dt, db, n), rdb)
			}
		}
	}
}

// bnRef is native_batch_norm in float64 over [nb, c, l] x: y, the batch
// mean and invstd (training) and the updated running statistics.
func bnRef(x []float64, nb, c, l int, w, b, rm, rv []float64, training bool, momentum, eps float64) (y, mean, invstd, nrm, nrv []float64) {
	mean, invstd = make([]float64, c), make([]float64, c)
	nrm, nrv = slices.Clone(rm), slices.Clone(rv)
	count := float64(nb * l)
	for j := range c {
		if training {
			var s, q float64
			for i := range nb {
				for k := range l {
					s += x[(i*c+j)*l+k]
				}
			}
			mu := s / count
			for i := range nb {
				for k := range l {
					d := x[(i*c+j)*l+k] - mu
					q += d * d
				}
			}
			v := q / count
			mean[j], invstd[j] = mu, 1/math.Sqrt(v+eps)
			if rm != nil {
				nrm[j] = (1-momentum)*rm[j] + momentum*mu
				nrv[j] = (1-momentum)*rv[j] + momentum*v*count/(count-1)
			}
		} else {
			mean[j], invstd[j] = rm[j], 1/math.Sqrt(rv[j]+eps)
		}
	}
	y = make([]float64, len(x))
	for i := range nb {
		for j := range c {
			for k := range l {
				p := (i*c+j)*l + k
				y[p] = (x[p] - mean[j]) * invstd[j]
				if w != nil {
					y[p] = y[p]*w[j] + b[j]
				}
			}
		}
	}
	return
}

func vec(addr uint64, dt dtypes.Dtype) backend.Strided {
	if addr == 0 {
		return backend.Strided{}
	}
	return backend.Strided{Addr: addr, Dtype: dt, Strides: []int{1}}
}

func testBatchNorm(t *testing.T, s *suite) {
	const nb, c, l, momentum, eps = 2, 3, 4, 0.1, 1e-5
	for _, dt := range floats {
		st := statDtype(dt)
		for _, tc := range []struct{ training, affine, running bool }{{true, true, true}, {true, false, false}, {false, true, true}} {
			xv, wv, bv := s.random(dt, nb*c*l), s.random(dt, c), s.random(dt, c)
			rmv := s.random(dt, c)
			rvv := make([]float64, c)
			for i := range rvv {
				rvv[i] = conv(dt, 0.5+float64(i)/4)
			}
			x, y := s.upload(dt, xv), s.upload(dt, make([]float64, nb*c*l))
			w, b := s.opt(tc.affine, dt, wv), s.opt(tc.affine, dt, bv)
			rm, rv := s.opt(tc.running, dt, rmv), s.opt(tc.running, dt, rvv)
			sm, si := s.upload(st, make([]float64, c)), s.upload(st, make([]float64, c))
			args := backend.BatchNormArgs{Dtype: dt, Y: y, X: x, Batch: nb, Channels: c, Length: l,
				Weight: vec(w, dt), Bias: vec(b, dt), RunningMean: vec(rm, dt), RunningVar: vec(rv, dt),
				SaveMean: sm, SaveInvstd: si, StatDtype: st, Training: tc.training, Momentum: momentum, Eps: eps}
			if !s.ok("BatchNorm", dt, s.c.BatchNorm(stream, args)) {
				continue
			}
			var rw, rb, rrm, rrv []float64
			if tc.affine {
				rw, rb = wv, bv
			}
			if tc.running {
				rrm, rrv = rmv, rvv
			}
			wy, wm, wi, nrm, nrv := bnRef(xv, nb, c, l, rw, rb, rrm, rrv, tc.training, momentum, eps)
			what := fmt.Sprintf("BatchNorm %+v", tc)
			s.check(what+" y", dt, s.download(dt, y, nb*c*l), wy)
			if tc.training {
				s.check(what+" save_mean", st, s.download(st, sm, c), wm)
				s.checkTol(what+" save_invstd", st, s.download(st, si, c), wi, max(tol(st), 1e-4))
				if tc.running {
					s.check(what+" running_mean", dt, s.download(dt, rm, c), nrm)
					s.check(what+" running_var", dt, s.download(dt, rv, c), nrv)
				}
			}
		}
	}
}

func testBatchNormBackward(t *testing.T, s *suite) {
	const nb, c, l, eps = 2, 3, 4, 1e-5
	for _, dt := range floats {
		st := statDtype(dt)
		for _, training := range []bool{true, false} {
			gv, xv, wv := s.random(dt, nb*c*l), s.random(dt, nb*c*l), s.random(dt, c)
			s1v, s2v := make([]float64, c), make([]float64, c)
			if training {
				_, mean, invstd, _, _ := bnRef(xv, nb, c, l, nil, nil, nil, nil, true, 0, eps)
				for j := range c {
					s1v[j], s2v[j] = conv(st, mean[j]), conv(st, invstd[j])
				}
			} else {
				for j := range c {
					s1v[j], s2v[j] = conv(st, 0.1*float64(j)), conv(st, 0.5+float64(j)/4)
				}
			}
			g, x, w := s.upload(dt, gv), s.upload(dt, xv), s.upload(dt, wv)
			s1, s2 := s.upload(st, s1v), s.upload(st, s2v)
			gx, gw, gb := s.upload(dt, make([]float64, nb*c*l)), s.upload(dt, make([]float64, c)), s.upload(dt, make([]float64, c))
			args := backend.BatchNormBackwardArgs{Dtype: dt, Grad: g, X: x, Batch: nb, Channels: c, Length: l,
				GradX: gx, GradWeight: vec(gw, dt), GradBias: vec(gb, dt),
				Weight: vec(w, dt), Stat1: vec(s1, st), Stat2: vec(s2, st), Training: training, Eps: eps}
			if !s.ok("BatchNormBackward", dt, s.c.BatchNormBackward(stream, args)) {
				continue
			}
			wx, ww, wb := make([]float64, nb*c*l), make([]float64, c), make([]float64, c)
			count := float64(nb * l)
			for j := range c {
				invstd := s2v[j]
				if !training {
					invstd = 1 / math.Sqrt(s2v[j]+eps)
				}
				var sg, sgx float64
				for i := range nb {
					for k := range l {
						p := (i*c+j)*l + k
						sg += gv[p]
						sgx += gv[p] * (xv[p] - s1v[j]) * invstd
					}
				}
				ww[j], wb[j] = sgx, sg
				for i := range nb {
					for k := range l {
						p := (i*c+j)*l + k
						if training {
							xh := (xv[p] - s1v[j]) * invstd
							wx[p] = wv[j] * invstd * (gv[p] - sg/count - xh*sgx/count)
						} else {
							wx[p] = wv[j] * invstd * gv[p]
						}
					}
				}
			}
			what := fmt.Sprintf("BatchNormBackward training=%v", training)
			s.checkTol(what+" dx", dt, s.download(dt, gx, nb*c*l), wx, 4*tol(dt))
			s.checkTol(what+" dw", dt, s.download(dt, gw, c), ww, 4*tol(dt))
			s.check(what+" db", dt, s.download(dt, gb, c), wb)
		}
	}
}

func testNLLLoss(t *testing.T, s *suite) {
	const rows, n = 5, 4
	for _, dt := range floats {
		for _, tdt := range []dtypes.Dtype{dtypes.Int64, dtypes.Int32} {
			lp := s.random(dt, rows*n)
			tv := make([]float64, rows)
			var want float64
			for i := range tv {
				tv[i] = float64(s.rng.IntN(n))
				want -= lp[i*n+int(tv[i])]
			}
			want /= rows
			a, tg, out := s.upload(dt, lp), s.upload(tdt, tv), s.upload(dt, []float64{0})
			if !s.ok("NLLLoss", dt, s.c.NLLLoss(stream, dt, out, a, tg, tdt, rows, n)) {
				continue
			}
			s.check("NLLLoss targets "+tdt.String(), dt, s.download(dt, out, 1), []float64{want})
		}
	}
}
