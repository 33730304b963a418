// Command vmathfit writes gpukit/kernels' generated files:
//
//	go generate ./gpukit/kernels/   (runs go run ./internal/vmathfit)
//
// vmath_tables.go holds the polynomial tables of the float32 tanh and erf
// (vmath.go), fitted as below; vmath_consts.go and vmath_consts.h hold
// the constant table of the vector assembly and the byte offset of each
// of its entries, written from one list (consts.go).
//
// Each function is split at 2ᵏ·{1, 1.5} (tanh) or 2ᵏ·{1, 1.25, 1.5,
// 1.75} (erf) into eight intervals, so that the interval of a float32 is
// a shift of its bits (the assembly looks up all eight lanes with one
// VPERMPS per coefficient). On each interval f(a) = c0 + t·q(t),
// t = a - c, where the centre c is a float32 near the middle whose f(c)
// lies within 2⁻¹⁴ ulp of the float32 c0: so c0 is exact to far below
// the rounding of the result and q is smooth. q is a weighted
// least-squares fit at Chebyshev nodes (error measured in ulp of the
// float32 result), its coefficients rounded to float32 one at a time,
// lowest order first, refitting the rest after each. The odd polynomial
// of tanh below 0.75, tanh x = x + x·z·T(z), z = x², is fitted the same
// way. Everything is in float64 against math.Tanh and math.Erf; the
// accuracy of the float32 evaluation is what TestVecAccuracy measures.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"math"
	"os"
	"path/filepath"
)

func main() {
	dir := flag.String("dir", ".", "the directory of package kernels")
	flag.Parse()
	files, err := generate()
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range fileNames {
		if err := writeFile(filepath.Join(*dir, name), files[name]); err != nil {
			log.Fatal(err)
		}
	}
}

// fileNames are the files generate writes, in package kernels.
var fileNames = []string{"vmath_tables.go", "vmath_consts.go", "vmath_consts.h"}

// generate returns the contents of each of fileNames.
func generate() (map[string][]byte, error) {
	tables, err := fitTables()
	if err != nil {
		return nil, err
	}
	cgo, err := constsGo()
	if err != nil {
		return nil, err
	}
	ch, err := constsH()
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"vmath_tables.go": tables, "vmath_consts.go": cgo, "vmath_consts.h": ch}, nil
}

// fitTables fits the tables and returns vmath_tables.go.
func fitTables() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(generatedBy + "\npackage kernels\n\n")

	tt := fitOdd(math.Tanh, tanhSplit, tanhOddDeg, true)
	fmt.Fprintf(&b, "// tanhT holds T(z), tanh x = x + x·z·T(z) for |x| < %g (lowest order first).\n", tanhSplit)
	fmt.Fprintf(&b, "var tanhT = [...]float32{%s}\n\n", list(tt))
	et := fitOdd(math.Erf, erfSplit, erfOddDeg, false)
	fmt.Fprintf(&b, "// erfT holds T(z), erf x = x + x·T(z) for |x| < %g (lowest order first).\n", erfSplit)
	fmt.Fprintf(&b, "var erfT = [...]float32{%s}\n\n", list(et))

	lc := fitLog()
	b.WriteString("// logC1..logC4 give R = z·(logC1 + z·(logC2 + z·(logC3 + z·logC4))) ≈ 2·atanh(s)/s - 2, z = s², |s| ≤ 3 - 2√2.\n")
	b.WriteString("const (\n")
	for j, c := range lc {
		fmt.Fprintf(&b, "\tlogC%d = float32(%v)\n", j+1, c)
	}
	b.WriteString(")\n\n")

	gc, gg := fitGeluGrad()
	b.WriteString("// GELU's derivative where Φ's polynomial serves (phiNeg < x < phiPos):\n")
	b.WriteString("// GELU'(x) = ½ + x·G(z), z = x²/2, G(z) = Σⱼ geluGradGs[j]·(z - geluGradC)ʲ.\n")
	fmt.Fprintf(&b, "const geluGradC = float32(%v)\n\n", gc)
	fmt.Fprintf(&b, "var geluGradGs = [...]float32{%s}\n\n", list(gg))

	emit(&b, "tanh", math.Tanh, tanhEdges(), tanhDeg)
	emit(&b, "erf", math.Erf, erfEdges(), erfDeg)

	return format.Source(b.Bytes())
}

// The split points and degrees. vmath.go's index arithmetic assumes
// these edges, and the assembly unrolls these degrees (vmath_amd64.go
// and vmath_arm64.go check the tables' sizes at compile time).
const (
	tanhSplit  = 0.75
	tanhMax    = 9.125 // tanh rounds to 1 above 9.011
	tanhOddDeg = 6
	tanhDeg    = 7
	erfSplit   = 0.75
	erfMax     = 4 // erf rounds to 1 above 3.92
	erfOddDeg  = 6
	erfDeg     = 8
)

// tanhEdges: [0.75, 1), [1, 1.5), [1.5, 2), ..., [6, 8), [8, tanhMax].
func tanhEdges() []float64 {
	return []float64{0.75, 1, 1.5, 2, 3, 4, 6, 8, tanhMax}
}

// erfEdges: [0.75, 0.875), [0.875, 1), [1, 1.25), ..., [2, 2.5),
// [2.5, erfMax].
func erfEdges() []float64 {
	return []float64{0.75, 0.875, 1, 1.25, 1.5, 1.75, 2, 2.5, erfMax}
}

func emit(b *bytes.Buffer, name string, f func(float64) float64, edges []float64, deg int) {
	n := len(edges) - 1
	cs := make([]float32, n)
	c0s := make([]float32, n)
	qs := make([][]float32, n)
	for i := range n {
		lo, hi := edges[i], edges[i+1]
		c := centre(f, lo, hi)
		c0 := float32(f(float64(c)))
		q := fitShifted(f, lo, hi, c, c0, deg)
		cs[i], c0s[i], qs[i] = c, c0, q
		log.Printf("%s [%g, %g]: c = %v, c0 = %v, fit error %.3g ulp", name, lo, hi, c, c0, shiftedErr(f, lo, hi, c, c0, q))
	}
	fmt.Fprintf(b, "// %sC holds the centres c and %sC0 the values f(c) of the intervals;\n", name, name)
	fmt.Fprintf(b, "// %sQ[j] the coefficients of tʲ in q (see internal/vmathfit).\n", name)
	fmt.Fprintf(b, "var %sC = [8]float32{%s}\n\n", name, list(cs))
	fmt.Fprintf(b, "var %sC0 = [8]float32{%s}\n\n", name, list(c0s))
	fmt.Fprintf(b, "var %sQ = [%d][8]float32{\n", name, deg+1)
	for j := 0; j <= deg; j++ {
		row := make([]float32, n)
		for i := range n {
			row[i] = qs[i][j]
		}
		fmt.Fprintf(b, "\t{%s},\n", list(row))
	}
	b.WriteString("}\n\n")
}

func list(v []float32) string {
	var b bytes.Buffer
	for i, x := range v {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%v", x)
	}
	return b.String()
}

// ulp32 is the spacing of float32 values at |v|.
func ulp32(v float64) float64 {
	v = math.Abs(v)
	if v < 0x1p-126 {
		return 0x1p-149
	}
	_, e := math.Frexp(v)
	return math.Ldexp(1, e-24)
}

// centre returns the float32 nearest the middle of [lo, hi] whose f(c)
// is within 2⁻¹⁴ ulp of a float32.
func centre(f func(float64) float64, lo, hi float64) float32 {
	mid := float32((lo + hi) / 2)
	up, dn := mid, mid
	for range 1 << 24 {
		for _, c := range []float32{up, dn} {
			v := f(float64(c))
			if math.Abs(v-float64(float32(v))) < ulp32(v)*0x1p-14 {
				return c
			}
		}
		up = math.Nextafter32(up, 100)
		dn = math.Nextafter32(dn, -100)
	}
	log.Fatalf("no centre in [%g, %g]", lo, hi)
	return 0
}

// nodes returns m Chebyshev nodes on [lo, hi].
func nodes(lo, hi float64, m int) []float64 {
	xs := make([]float64, m)
	for i := range xs {
		xs[i] = (lo+hi)/2 + (hi-lo)/2*math.Cos(math.Pi*(float64(i)+0.5)/float64(m))
	}
	return xs
}

// fitShifted fits q(t) = Σ qⱼ tʲ to (f(c+t) - c0)/t on [lo-c, hi-c],
// each node weighted by |t|/ulp(f).
func fitShifted(f func(float64) float64, lo, hi float64, c, c0 float32, deg int) []float32 {
	var ts, g, w []float64
	for _, a := range nodes(lo, hi, 600) {
		t := a - float64(c)
		if math.Abs(t) < 1e-9 {
			continue
		}
		v := f(a)
		ts = append(ts, t)
		g = append(g, (v-float64(c0))/t)
		w = append(w, math.Abs(t)/ulp32(v))
	}
	return fitRounded(ts, g, w, deg, math.Max(hi-float64(c), float64(c)-lo))
}

func shiftedErr(f func(float64) float64, lo, hi float64, c, c0 float32, q []float32) float64 {
	worst := 0.0
	for _, a := range nodes(lo, hi, 5000) {
		t := a - float64(c)
		s := 0.0
		for j := len(q) - 1; j >= 0; j-- {
			s = s*t + float64(q[j])
		}
		v := f(a)
		worst = math.Max(worst, math.Abs(float64(c0)+t*s-v)/ulp32(v))
	}
	return worst
}

// fitLog fits P(z), 2·atanh(s)/s = 2 + z·P(z), z = s², for s up to
// 3 - 2√2 (log's m in [√½, √2)), weighted by s³ (P enters log as s·z·P).
func fitLog() []float32 {
	smax := 3 - 2*math.Sqrt2
	var zs, g, w []float64
	for _, s := range nodes(0, smax, 600) {
		z := s * s
		zs = append(zs, z)
		g = append(g, (2*math.Atanh(s)/s-2)/z)
		w = append(w, s*z)
	}
	p := fitRounded(zs, g, w, 3, smax*smax)
	worst := 0.0
	for _, s := range nodes(0, smax, 5000) {
		z := s * s
		v := float64(p[3])
		for j := 2; j >= 0; j-- {
			v = v*z + float64(p[j])
		}
		worst = math.Max(worst, math.Abs(s*z*v-(2*math.Atanh(s)-2*s)))
	}
	log.Printf("log: R fit error %.3g (absolute, times s)", worst)
	return p
}

// GELU's derivative Φ(x) + x·φ(x) less ½ is odd in x (Φ - ½ and x·φ
// are), so on the interval where phiGauss uses its polynomial of Φ,
// x in (phiNeg, phiPos), it is x·G(z) with z = x²/2 in [0, phiPos²/2]:
// a polynomial, of degree 8 as erf's P, where Φ + x·φ needs e^(-x²/2)
// and Φ's own polynomial. G is fitted in t = z - geluGradCentre, where
// the errors of Horner's steps grow least, and geluGrad32 adds it as
// (½ + x·G₀) + x·(G(t) - G₀). Against float64, over every float32 of
// the interval (2,141,595,659 values), that form's largest error is
// 3.05 units of the larger term (TestVecAccuracy's unit) against 4.26
// for Φ + x·φ, 1.53 ulp against 1.80 for x ≥ 0, 4.2·10⁻⁸ against
// 6.4·10⁻⁸ absolute for x < 0, and its mean 0.037 units against 0.068;
// ½ + x·G(z) fitted in z itself reached 1.76 ulp for x ≥ 0 (every 257th
// float32), worse than Φ + x·φ.
const (
	geluGradCentre = 0.75
	geluGradDeg    = 8
)

// geluGradHi is phiPos (vmath.go), as float32 rounds it.
var geluGradHi = float64(float32(1.5 * math.Sqrt2))

func geluGrad64(x float64) float64 {
	return 0.5*math.Erfc(-x/math.Sqrt2) + x*math.Exp(-x*x/2)/math.Sqrt(2*math.Pi)
}

// fitGeluGrad fits G(z) = (GELU'(x) - ½)/x, z = x²/2, on x in [0,
// geluGradHi], each node weighted by x/ulp(GELU'(x)), and returns its
// centre and coefficients.
func fitGeluGrad() (float32, []float32) {
	c := float32(geluGradCentre)
	var ts, g, w []float64
	for _, x := range nodes(0, geluGradHi, 800) {
		v := geluGrad64(x)
		ts = append(ts, x*x/2-float64(c))
		g = append(g, (v-0.5)/x)
		w = append(w, x/ulp32(v))
	}
	zHi := geluGradHi * geluGradHi / 2
	q := fitRounded(ts, g, w, geluGradDeg, math.Max(zHi-float64(c), float64(c)))
	worst := 0.0
	for _, x := range nodes(0, geluGradHi, 5000) {
		t := x*x/2 - float64(c)
		s := 0.0
		for j := len(q) - 1; j >= 0; j-- {
			s = s*t + float64(q[j])
		}
		v := geluGrad64(x)
		worst = math.Max(worst, math.Abs(0.5+x*s-v)/ulp32(v))
	}
	log.Printf("gelu': G fit error %.3g ulp", worst)
	return c, q
}

// fitOdd fits T(z), f(x) = x + x·z·T(z), z = x², on [0, hi]; without
// withZ, f(x) = x + x·T(z).
func fitOdd(f func(float64) float64, hi float64, deg int, withZ bool) []float32 {
	var zs, g, w []float64
	for _, x := range nodes(0, hi, 600) {
		z := x * x
		v := f(x)
		zs = append(zs, z)
		if withZ {
			g = append(g, (v/x-1)/z)
			w = append(w, x*z/ulp32(v))
		} else {
			g = append(g, v/x-1)
			w = append(w, x/ulp32(v))
		}
	}
	t := fitRounded(zs, g, w, deg, hi*hi)
	worst := 0.0
	for _, x := range nodes(0, hi, 5000) {
		z := x * x
		s := 0.0
		for j := len(t) - 1; j >= 0; j-- {
			s = s*z + float64(t[j])
		}
		if withZ {
			s *= z
		}
		v := f(x)
		worst = math.Max(worst, math.Abs(x+x*s-v)/ulp32(v))
	}
	log.Printf("odd [0, %g]: fit error %.3g ulp", hi, worst)
	return t
}

// fitRounded minimises Σ wᵢ²(Σⱼ pⱼ xᵢʲ - gᵢ)², then rounds p to float32
// one coefficient at a time, lowest order first, refitting the higher
// ones to what the rounded ones leave. scale normalises x for the
// solve.
func fitRounded(xs, g, w []float64, deg int, scale float64) []float32 {
	p := make([]float32, deg+1)
	r := append([]float64(nil), g...)
	for j := 0; j <= deg; j++ {
		sol := lsq(xs, r, w, j, deg, scale)
		p[j] = float32(sol[0])
		for i, x := range xs {
			r[i] -= float64(p[j]) * math.Pow(x, float64(j))
		}
	}
	return p
}

// lsq solves the weighted least-squares problem for the coefficients of
// xʲ⁰ .. xᵈᵉᵍ by Householder QR, returning them lowest order first.
func lsq(xs, g, w []float64, j0, deg int, scale float64) []float64 {
	m, n := len(xs), deg-j0+1
	a := make([][]float64, m)
	b := make([]float64, m)
	for i, x := range xs {
		a[i] = make([]float64, n)
		for k := range n {
			a[i][k] = w[i] * math.Pow(x/scale, float64(j0+k))
		}
		b[i] = w[i] * g[i]
	}
	for k := range n {
		norm := 0.0
		for i := k; i < m; i++ {
			norm += a[i][k] * a[i][k]
		}
		norm = math.Sqrt(norm)
		if a[k][k] > 0 {
			norm = -norm
		}
		v := make([]float64, m)
		v[k] = a[k][k] - norm
		for i := k + 1; i < m; i++ {
			v[i] = a[i][k]
		}
		vv := 0.0
		for i := k; i < m; i++ {
			vv += v[i] * v[i]
		}
		if vv == 0 {
			continue
		}
		for col := k; col < n; col++ {
			d := 0.0
			for i := k; i < m; i++ {
				d += v[i] * a[i][col]
			}
			d = 2 * d / vv
			for i := k; i < m; i++ {
				a[i][col] -= d * v[i]
			}
		}
		d := 0.0
		for i := k; i < m; i++ {
			d += v[i] * b[i]
		}
		d = 2 * d / vv
		for i := k; i < m; i++ {
			b[i] -= d * v[i]
		}
	}
	x := make([]float64, n)
	for k := n - 1; k >= 0; k-- {
		s := b[k]
		for col := k + 1; col < n; col++ {
			s -= a[k][col] * x[col]
		}
		x[k] = s / a[k][k]
	}
	for k := range x {
		x[k] /= math.Pow(scale, float64(j0+k))
	}
	return x
}

// writeFile writes data to path through a temporary in the same
// directory, renamed into place.
func writeFile(path string, data []byte) error {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".vmathfit-*")
	if err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
