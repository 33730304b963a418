package main

import (
	"bytes"
	"io"
	"log"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedFilesAreCurrent runs the generator in memory and compares
// its output with the files in gpukit/kernels byte for byte: a table
// edited by hand, or a change to the fit or to consts.go's list without
// go generate, fails here.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	log.SetOutput(io.Discard) // the fit's progress
	defer log.SetOutput(os.Stderr)
	files, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range fileNames {
		if name == "vmath_tables.go" && !fitIsUnfused {
			t.Logf("%s not compared: this build fuses the fit's multiply-adds (fit_fused_test.go)", name)
			continue
		}
		have, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(have, files[name]) {
			t.Errorf("gpukit/kernels/%s is stale: run go generate ./gpukit/kernels/", name)
		}
	}
}
