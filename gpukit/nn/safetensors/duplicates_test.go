package safetensors

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A header that repeats a tensor name (even with another dtype) or a
// metadata key is refused, as the reference implementation refuses it.
func TestDuplicateKeysAreRefused(t *testing.T) {
	tests := []struct{ name, header, want string }{
		{"TensorTwice", `{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"w":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`,
			`tensor "w" appears twice in the header`},
		{"MetadataKeyTwice", `{"__metadata__":{"format":"pt","format":"np"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`,
			`key "format" appears twice in "__metadata__"`},
		{"MetadataTwice", `{"__metadata__":{"a":"1"},"__metadata__":{"b":"2"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`,
			`tensor "__metadata__" appears twice in the header`},
		{"FieldTwice", `{"w":{"dtype":"I64","dtype":"F32","shape":[2],"data_offsets":[0,8]}}`,
			`key "dtype" appears twice in "w"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHeader([]byte(tc.header))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	f, err := ParseHeader([]byte(`{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`))
	require.NoError(t, err, "the same key in different objects is fine")
	assert.Len(t, f.Tensors, 2)
}
