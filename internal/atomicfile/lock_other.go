//go:build !unix

package atomicfile

import "os"

const noFollow = 0

// Without flock a temporary file is never known to be abandoned: stale
// ones are left in place.
func lock(*os.File) error { return nil }

func tryLock(*os.File) bool { return false }
