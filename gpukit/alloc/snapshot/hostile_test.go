package snapshot

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/internal/pickle"
	"github.com/gpumem/course/gpukit/internal/pickle/pickletest"
)

// hostilePickles are files a stranger may bring: each must give an error
// that starts with "snapshot: ", never a panic or a large allocation.
func hostilePickles(t testing.TB) map[string][]byte {
	huge := append([]byte{0x80, 0x04, 0x8d}, binary.LittleEndian.AppendUint64(nil, 1<<63)...) // BINUNICODE8 of 2^63 bytes
	good := pickletest.Gunzip(t, filepath.Join(h200, "streams.pickle.gz"))
	return map[string][]byte{
		"GLOBAL os system":  []byte("\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03."),
		"STACK_GLOBAL":      []byte("\x80\x04\x95\x1a\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x8c\x06system\x93\x8c\x02ls\x85R."),
		"deep nesting":      pickletest.Nested(100000),
		"2^63 length":       huge,
		"truncated":         good[:len(good)/2],
		"empty":             {},
		"not a pickle":      []byte("hello, world\n"),
		"a list":            []byte("\x80\x02]."),
		"no segments":       []byte("\x80\x02}."),
		"trailing bytes":    append(append([]byte{}, good...), 'x'),
		"segments not list": []byte("\x80\x02}X\x08\x00\x00\x00segmentsK\x01s."),
	}
}

func TestReadHostile(t *testing.T) {
	for name, b := range hostilePickles(t) {
		t.Run(name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(b), Limits)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "snapshot: "), err.Error())
		})
	}
}

// FuzzRead feeds mutated snapshots to the model builder and, when they
// read, to Check and WhatIf: no panic, and the limits bound what is made.
func FuzzRead(f *testing.F) {
	f.Add(pickletest.Gunzip(f, filepath.Join(h200, "streams.pickle.gz")))
	f.Add(pickletest.Gunzip(f, filepath.Join(h200, "streams-expandable.pickle.gz")))
	for _, b := range hostilePickles(f) {
		f.Add(b)
	}
	lim := pickle.Limits{MaxInput: 1 << 20, MaxValues: 1 << 16, MaxString: 1 << 12}
	f.Fuzz(func(t *testing.T, b []byte) {
		watch := time.AfterFunc(10*time.Second, func() { panic("FuzzRead: one input took 10 s") })
		defer watch.Stop()
		s, err := Read(bytes.NewReader(b), lim)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "snapshot: ") {
				t.Fatalf("error without the package's prefix: %v", err)
			}
			return
		}
		for d, tr := range s.Traces {
			if len(tr) == 0 {
				continue
			}
			if _, err := s.Check(CheckOptions{Device: d, Capacity: 1 << 30}); err != nil && !strings.HasPrefix(err.Error(), "snapshot: ") {
				t.Fatalf("Check: %v", err)
			}
			if _, err := s.WhatIf(WhatIfOptions{Device: d, Capacity: 1 << 30}, []Setting{{Fraction: 1}, {Config: expandable(), Fraction: 0.5}}); err != nil && !strings.HasPrefix(err.Error(), "snapshot: ") {
				t.Fatalf("WhatIf: %v", err)
			}
		}
	})
}

func expandable() (c alloc.Config) {
	c.ExpandableSegments = true
	return c
}
