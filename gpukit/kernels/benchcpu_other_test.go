//go:build !unix

package kernels

import "testing"

// reportCPU runs loop: this OS has no getrusage, so only the wall time
// is reported.
func reportCPU(b *testing.B, loop func()) { loop() }
