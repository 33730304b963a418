package hostmem

import (
	"sync"
	"syscall"
)

// Total is the machine's physical memory in bytes (0 if unknown), read
// once: allocations check against it on hot paths (every loaded item).
var Total = sync.OnceValue(func() int64 {
	var info syscall.Sysinfo_t
	if err := syscall.Sysinfo(&info); err != nil {
		return 0
	}
	return int64(info.Totalram) * int64(info.Unit)
})
