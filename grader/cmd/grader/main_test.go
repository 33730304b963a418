package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in           string
		index, count int
		ok           bool
	}{
		{"", 0, 1, true},
		{"0/8", 0, 8, true},
		{"7/8", 7, 8, true},
		{"8/8", 0, 0, false},
		{"-1/8", 0, 0, false},
		{"0/0", 0, 0, false},
		{"3", 0, 0, false},
		{"a/b", 0, 0, false},
	} {
		index, count, err := parseShard(tc.in)
		if !tc.ok {
			var u errUsage
			assert.ErrorAs(t, err, &u, tc.in)
			continue
		}
		assert.NoError(t, err, tc.in)
		assert.Equal(t, [2]int{tc.index, tc.count}, [2]int{index, count}, tc.in)
	}
}
