package device_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
)

func TestCublasWorkspaceSize(t *testing.T) {
	const pre = 4096*1024*2 + 16*1024*8 // PyTorch's ":4096:2:16:8"
	tests := []struct {
		name   string
		config string
		major  int
		want   int64
		err    string
	}{
		{"default before Hopper", "", 8, pre, ""},
		{"default on Turing", "", 7, pre, ""},
		{"default when the architecture is unknown", "", 0, pre, ""},
		{"default on Hopper", "", 9, 32 << 20, ""},
		{"default on Blackwell: only sm90 gets 32 MiB", "", 10, pre, ""},
		{"one size and count", ":4096:8", 8, 32 << 20, ""},
		{"the deterministic setting", ":16:8", 9, 128 << 10, ""},
		{"several pairs add up", ":4096:2:16:8", 9, pre, ""},
		{"off", ":0:0", 8, 0, ""},
		{"no pair at all", "4096", 8, 0, "no :SIZE:COUNT pair"},
		{"empty pair", "::", 8, 0, "no :SIZE:COUNT pair"},
		{"too large", ":9223372036854775807:2", 8, 0, "too large"},
		{"product too large", ":4294967296:4294967296", 8, 0, "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := device.CublasWorkspaceSize(tt.config, tt.major)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				assert.ErrorContains(t, err, device.CublasWorkspaceEnvVar)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, int64(tt.want), got)
		})
	}
}

func TestBlasWorkspaceOncePerStream(t *testing.T) {
	d, err := device.New(sim.New(0, mustProfile(t, "classroom")), device.WithCublasWorkspaceConfig(""))
	require.NoError(t, err)
	size, err := device.CublasWorkspaceSize("", d.Profile().ComputeMajor)
	require.NoError(t, err)
	require.Equal(t, int64(4096*1024*2+16*1024*8), size, "the classroom card is pre-Hopper")

	require.NoError(t, d.BlasWorkspace(d.DefaultStream()))
	assert.Equal(t, size, d.MemoryAllocated(), "the first product on a stream allocates its workspace through the caching allocator")
	assert.Equal(t, int64(20<<20), d.MemoryReserved(), "a request under 10 MiB gets a 20 MiB segment")
	require.NoError(t, d.BlasWorkspace(d.DefaultStream()))
	assert.Equal(t, size, d.MemoryAllocated(), "later products on the same stream reuse it")

	s := d.NewStream()
	require.NoError(t, d.BlasWorkspace(s))
	assert.Equal(t, 2*size, d.MemoryAllocated(), "each stream has its own")

	d.EmptyCache()
	assert.Equal(t, 2*size, d.MemoryAllocated(), "empty_cache keeps them: they are allocated blocks")

	d.ClearBlasWorkspaces()
	assert.Zero(t, d.MemoryAllocated(), "clearing frees them")
	require.NoError(t, d.BlasWorkspace(d.DefaultStream()))
	assert.Equal(t, size, d.MemoryAllocated(), "and the next product allocates again")
}

func TestBlasWorkspaceConfig(t *testing.T) {
	off, err := device.New(sim.New(0, mustProfile(t, "h100-80gb")), device.WithCublasWorkspaceConfig(":0:0"))
	require.NoError(t, err)
	require.NoError(t, off.BlasWorkspace(off.DefaultStream()))
	assert.Zero(t, off.MemoryAllocated(), `":0:0" turns the workspace off`)

	hopper, err := device.New(sim.New(0, mustProfile(t, "h100-80gb")), device.WithCublasWorkspaceConfig(""))
	require.NoError(t, err)
	require.NoError(t, hopper.BlasWorkspace(hopper.DefaultStream()))
	assert.Equal(t, int64(32<<20), hopper.MemoryAllocated(), "32 MiB on Hopper")

	plain, err := device.New(sim.New(0, mustProfile(t, "classroom")))
	require.NoError(t, err)
	require.NoError(t, plain.BlasWorkspace(plain.DefaultStream()))
	assert.Equal(t, int64(4096*1024*2+16*1024*8), plain.MemoryAllocated(), "without the option or the variable, PyTorch's default")

	meta, err := device.New(sim.NewMeta(0, mustProfile(t, "h100-80gb")))
	require.NoError(t, err)
	require.NoError(t, meta.BlasWorkspace(meta.DefaultStream()))
	assert.Zero(t, meta.MemoryAllocated(), "a meta device runs no cuBLAS: no workspace")
	meta, err = device.New(sim.NewMeta(0, mustProfile(t, "h100-80gb")), device.WithCublasWorkspaceConfig(":1024:1"))
	require.NoError(t, err)
	require.NoError(t, meta.BlasWorkspace(meta.DefaultStream()))
	assert.Zero(t, meta.MemoryAllocated(), "not even when asked for one")

	t.Setenv(device.CublasWorkspaceEnvVar, ":1024:1")
	env, err := device.New(sim.New(0, mustProfile(t, "classroom")))
	require.NoError(t, err)
	require.NoError(t, env.BlasWorkspace(env.DefaultStream()))
	assert.Equal(t, int64(1<<20), env.MemoryAllocated(), "the environment variable is honoured")

	t.Setenv(device.CublasWorkspaceEnvVar, "lots")
	_, err = device.New(sim.New(0, mustProfile(t, "classroom")))
	assert.ErrorContains(t, err, "device: sim:0: CUBLAS_WORKSPACE_CONFIG")
	_, err = device.New(sim.New(0, mustProfile(t, "classroom")), device.WithCublasWorkspaceConfig(":8:"))
	assert.ErrorContains(t, err, "no :SIZE:COUNT pair")
}

func TestBlasWorkspaceOutOfMemory(t *testing.T) {
	d, err := device.New(sim.New(0, mustProfile(t, "classroom")), device.WithCublasWorkspaceConfig(":4194304:1")) // 4 GiB
	require.NoError(t, err)
	err = d.BlasWorkspace(d.DefaultStream())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "out of memory")
	assert.Zero(t, d.MemoryAllocated())
	d.ClearBlasWorkspaces() // nothing to clear: no panic
}
