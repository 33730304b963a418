package device

// ForgetForTest drops name from the registry, so that a test which opens a
// device with particular options can run again (go test -count=N).
func ForgetForTest(name string) {
	registry.Lock()
	defer registry.Unlock()
	delete(registry.m, name)
}
