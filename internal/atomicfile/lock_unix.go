//go:build unix

package atomicfile

import (
	"os"
	"syscall"
)

// noFollow keeps removeStale from opening a symbolic link's target.
const noFollow = syscall.O_NOFOLLOW

// lock takes an exclusive lock on f, held until f is closed (or its
// process dies).
func lock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }

// tryLock reports whether f could be locked: no live writer holds it.
func tryLock(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
