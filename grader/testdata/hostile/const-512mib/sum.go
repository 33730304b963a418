package toy

// big is 512 MiB of initialised data: the package compiles (into a 512 MiB
// archive in the build cache) and the link fails or is slow.
var big = [512 << 20]byte{1: 1, 512<<20 - 1: 1}

// Sum is wrong.
func Sum(xs []int) (int, error) { return int(big[1]) - 2, nil }
