package isnil

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

type thing struct{}

func (*thing) Do() {}

func TestNil(t *testing.T) {
	var p *thing
	var i interface{ Do() } = p
	tests := []struct {
		name string
		v    any
		want bool
	}{
		{"nil", nil, true}, {"typed nil pointer", p, true}, {"nil in an interface", i, true},
		{"pointer", &thing{}, false}, {"value", 3, false}, {"nil func", (func())(nil), true},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, Nil(tc.v), tc.name)
	}
}
