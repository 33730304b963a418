package tensor

import "syscall"

// hostMemoryTotal is the machine's physical memory in bytes (0 if unknown):
// a host tensor larger than that cannot be allocated, and asking Go for it
// would end the program with a fatal "out of memory" that no recover sees.
func hostMemoryTotal() int64 {
	var info syscall.Sysinfo_t
	if err := syscall.Sysinfo(&info); err != nil {
		return 0
	}
	return int64(info.Totalram) * int64(info.Unit)
}
