// Package hostmem says how much memory the machine has, so that a host
// allocation larger than that is refused with an error: asking Go for it
// would end the program with a fatal "out of memory" that no recover
// sees, or panic with "makeslice: len out of range".
package hostmem

import "fmt"

// Check returns an error, prefixed with who, when n bytes of host memory
// cannot be allocated: n is negative or larger than the machine's
// physical memory (as far as it is known).
func Check(who string, n int64) error {
	if n < 0 {
		return fmt.Errorf("%s: host allocation of %d bytes: size must not be negative", who, n)
	}
	if total := Total(); total > 0 && n > total {
		return fmt.Errorf("%s: host allocation of %d bytes is larger than this machine's memory (%d bytes)", who, n, total)
	}
	if n > maxAlloc {
		return fmt.Errorf("%s: host allocation of %d bytes is larger than a Go slice can be", who, n)
	}
	return nil
}

// maxAlloc bounds an allocation where the machine's memory is unknown:
// Go's own limit on amd64 and arm64 (2^48 bytes).
const maxAlloc = 1 << 48
