//go:build !windows

package grader

// pipeFiles is the generated TestMain as mainFile writes it: the pipes are
// fd 3 and fd 4 (build_windows.go has the other way).
func pipeFiles(code, id string) string { return code }
