package parallel

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/nn"
)

// Error is the error of a refused pipeline; its message starts with
// "parallel: ".
type Error struct{ msg string }

func (e *Error) Error() string { return "parallel: " + e.msg }

func errorf(format string, args ...any) *Error { return &Error{fmt.Sprintf(format, args...)} }

// Where returns the names of the devices ("sim:0", "cpu") on which m's
// parameters and buffers, and its children's, live: sorted, each once.
// A module that owns no tensor, such as ReLU, gives none.
func Where(m nn.Module) []string {
	var names []string
	for _, n := range append(nn.NamedParameters(m), nn.NamedBuffers(m)...) {
		names = append(names, n.Tensor.DeviceName())
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// DeviceOf returns the one device all of m's tensors live on. It fails
// when m owns no tensor (its device is whatever its input's is) or when
// they are spread over several devices, or on the host.
func DeviceOf(m nn.Module) (*device.Device, error) {
	tensors := append(nn.NamedParameters(m), nn.NamedBuffers(m)...)
	if len(tensors) == 0 {
		return nil, errorf("%T owns no parameters or buffers, so it has no device of its own (it runs where its input is)", m)
	}
	if w := Where(m); len(w) > 1 {
		return nil, errorf("%T has tensors on several devices: %s", m, strings.Join(w, ", "))
	}
	d := tensors[0].Tensor.Device()
	if d == nil {
		return nil, errorf("%T lives on the host, not on a device", m)
	}
	return d, nil
}
