// Package computetest is a conformance suite for backend.Compute: every
// backend that computes (the sim device, the cuda device, host memory)
// runs it, as every allocator runs gpukit/alloc/alloctest:
//
//	func TestCompute(t *testing.T) {
//		b := sim.New(0, profile)
//		missing := computetest.Run(t, b, b)
//		t.Logf("lacks %v", missing)
//	}
//
// It checks every Compute method, for every dtype the method is defined
// for, on small random inputs (contiguous, transposed and broadcast
// operands; row kernels with their optional arrays present and absent)
// against a float64 reference built on gpukit/kernels, within a tolerance
// per dtype (exact for the integer types and bool). A method that returns
// a backend.UnsupportedError is not a failure: Run logs and returns those
// (method, dtype) pairs, the list of the ops the backend lacks. Any other
// error, or a wrong value, fails the test.
//
// The backend's Capabilities table must say the same: a call whose
// (method, dtype) the table lists must not return an UnsupportedError, one
// it does not list must, and the table must list nothing outside the
// suite's calls (backend.Domain), so that a table cannot lie.
package computetest
