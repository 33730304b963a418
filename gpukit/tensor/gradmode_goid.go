//go:build !(amd64 || arm64) || purego

package tensor

import (
	"bytes"
	"runtime"
	"strconv"
)

// goroutineKey identifies the calling goroutine for grad modes: its id,
// read from runtime.Stack (about a microsecond) where no assembly reads
// the goroutine pointer.
func goroutineKey() uintptr {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	b := bytes.TrimPrefix(buf[:n], []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		panic("tensor: cannot read goroutine id: " + err.Error())
	}
	return uintptr(id)
}
