package dtypes_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpumem/course/gpukit/dtypes"
)

func TestTable(t *testing.T) {
	for _, c := range []struct {
		d           dtypes.Dtype
		name        string
		size        int
		float, half bool
	}{
		{dtypes.Float32, "float32", 4, true, false},
		{dtypes.Float64, "float64", 8, true, false},
		{dtypes.Float16, "float16", 2, true, true},
		{dtypes.BFloat16, "bfloat16", 2, true, true},
		{dtypes.Int64, "int64", 8, false, false},
		{dtypes.Int32, "int32", 4, false, false},
		{dtypes.Bool, "bool", 1, false, false},
	} {
		assert.Equal(t, c.name, c.d.String())
		assert.Equal(t, c.size, c.d.Size(), c.name)
		assert.Equal(t, c.float, c.d.IsFloat(), c.name)
		assert.Equal(t, c.half, c.d.IsHalf(), c.name)
		assert.True(t, c.d.Valid(), c.name)
	}
	assert.Len(t, dtypes.All(), 7, "a new dtype needs a row above")
	bad := dtypes.Dtype(7)
	assert.False(t, bad.Valid())
	assert.Equal(t, "Dtype(7)", bad.String())
	assert.False(t, bad.IsFloat())
	assert.PanicsWithValue(t, "dtypes: unknown Dtype(7)", func() { bad.Size() })
	assert.PanicsWithValue(t, "dtypes: unknown Dtype(7)", func() { dtypes.Load(bad, make([]byte, 8), 0) })
	assert.PanicsWithValue(t, "dtypes: unknown Dtype(7)", func() { dtypes.Store(bad, make([]byte, 8), 0, 1) })
}

// Store then Load gives the value rounded to the dtype, and Round says
// what that rounding is.
func TestStoreLoadRound(t *testing.T) {
	for _, d := range dtypes.All() {
		for _, v := range []float64{0, 1, -2.5, 0.1, 65519, 1e6, math.Inf(1)} {
			if !d.IsFloat() && math.IsInf(v, 0) {
				continue
			}
			buf := make([]byte, 3*d.Size())
			dtypes.Store(d, buf, 1, v)
			got := dtypes.Load(d, buf, 1)
			switch {
			case d == dtypes.Bool:
				assert.Equal(t, map[bool]float64{true: 1, false: 0}[v != 0], got, "bool %v", v)
			case d.IsFloat():
				assert.Equal(t, dtypes.Round(d, v), got, "%s %v", d, v)
			default:
				assert.Equal(t, math.Trunc(v), got, "%s %v truncates", d, v)
			}
			assert.Zero(t, dtypes.Load(d, buf, 0), "%s: Store wrote only element 1", d)
			assert.Zero(t, dtypes.Load(d, buf, 2), "%s: Store wrote only element 1", d)
		}
	}
}

// A float32 comparison with 0.1 compares against 0.1 rounded to float32,
// as PyTorch's does.
func ExampleRound() {
	fmt.Println(dtypes.Round(dtypes.Float32, 0.1) == float64(float32(0.1)))
	fmt.Println(dtypes.Round(dtypes.Float16, 0.1))
	fmt.Println(dtypes.Round(dtypes.Int64, 0.1))
	// Output:
	// true
	// 0.0999755859375
	// 0.1
}
