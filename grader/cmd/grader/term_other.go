//go:build !linux

package main

import (
	"io"
	"os"
)

// isTerminal, off Linux, takes any character device for a terminal: it
// only chooses how batch shows its progress.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
