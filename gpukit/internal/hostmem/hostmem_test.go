package hostmem

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheck(t *testing.T) {
	assert.NoError(t, Check("x", 0))
	assert.NoError(t, Check("x", 1<<20))
	assert.EqualError(t, Check("x", -1), "x: host allocation of -1 bytes: size must not be negative")
	assert.ErrorContains(t, Check("x", math.MaxInt64), "x: host allocation of 9223372036854775807 bytes is larger than")
}
