//go:build unix

package viz

import (
	"context"
	"encoding/gob"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/janpfeifer/gonb/gonbui/protocol"
	"github.com/stretchr/testify/require"
)

// showChildEnv marks the test binary run as a notebook cell's program.
const showChildEnv = "GPUKIT_VIZ_SHOW_CHILD"

// TestShowWaitsForGoNB plays GoNB's kernel for a program that shows a plot
// and exits: the kernel closes its end of the pipe as soon as the program
// exits, read or not (gonb v0.11.4, internal/jpyexec/namedpipes.go), so a
// plot a cell shows last was sometimes lost, as in make image-test's browser
// session (the welcome lesson saved without its plot after 120 s). Show
// returns only after the kernel has read what it sent (gonbui.Sync).
func TestShowWaitsForGoNB(t *testing.T) {
	if os.Getenv(showChildEnv) == "1" {
		showAsACell()
		return
	}
	dir := t.TempDir()
	toKernel, fromKernel := filepath.Join(dir, "pipe"), filepath.Join(dir, "back")
	require.NoError(t, syscall.Mkfifo(toKernel, 0o600))
	require.NoError(t, syscall.Mkfifo(fromKernel, 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestShowWaitsForGoNB$")
	cmd.Env = append(os.Environ(), showChildEnv+"=1",
		protocol.GONB_PIPE_ENV+"="+toKernel, protocol.GONB_PIPE_BACK_ENV+"="+fromKernel)
	// The program writes to a file, which the test may read at any time.
	out, err := os.Create(filepath.Join(dir, "out"))
	require.NoError(t, err)
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// The kernel's ends of the pipes, opened in the order the program
	// opens its own. Should the program end first, opening each pipe for
	// both directions here releases the open that waits for it.
	type pipes struct {
		reader, writer *os.File
		err            error
	}
	opened := make(chan pipes, 1)
	go func() {
		var p pipes
		if p.reader, p.err = os.Open(toKernel); p.err == nil {
			p.writer, p.err = os.OpenFile(fromKernel, os.O_WRONLY, 0)
		}
		opened <- p
	}()
	var p pipes
	select {
	case p = <-opened:
	case err := <-exited:
		for _, path := range []string{toKernel, fromKernel} {
			if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
				defer f.Close()
			}
		}
		t.Fatalf("the program ended (%v) before it opened GoNB's pipes:\n%s", err, output(out))
	}
	require.NoError(t, p.err)
	defer p.reader.Close()
	defer p.writer.Close()

	// What the program sends, in order, until it closes its end.
	received := make(chan *protocol.DisplayData)
	go func() {
		defer close(received)
		dec := gob.NewDecoder(p.reader)
		for {
			data := &protocol.DisplayData{}
			if err := dec.Decode(data); err != nil {
				return
			}
			received <- data
		}
	}()
	first, ok := <-received
	require.True(t, ok, "the program sent nothing:\n%s", output(out))
	require.Contains(t, first.Data, protocol.MIMEImagePNG, "the first message is the plot")
	next, ok := <-received
	require.True(t, ok, "Show returned, and the program exited, without waiting for GoNB to read the plot (gonbui.Sync):\n%s", output(out))
	value, isValue := next.Data[protocol.MIMECommValue].(protocol.CommValue)
	require.True(t, isValue, "after the plot, want GoNB's sync request, got %v", next.Data)
	require.Equal(t, protocol.GonbuiSyncAddress, value.Address)

	// Before the acknowledgment the program is still in Show.
	select {
	case err := <-exited:
		t.Fatalf("the program ended (%v) before GoNB acknowledged:\n%s", err, output(out))
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, gob.NewEncoder(p.writer).Encode(&protocol.CommValue{Address: protocol.GonbuiSyncAckAddress, Value: value.Value}))
	select {
	case err := <-exited:
		require.NoError(t, err, output(out))
	case <-ctx.Done():
		t.Fatalf("the program did not end after GoNB's acknowledgment:\n%s", output(out))
	}
	require.Contains(t, output(out), "shown")
}

// output is what the program has written so far.
func output(f *os.File) string {
	data, _ := os.ReadFile(f.Name())
	return string(data)
}

// showAsACell is the program's side of TestShowWaitsForGoNB.
func showAsACell() {
	p, err := Lines("memory", "step", "bytes", false, Series{Name: "allocated", X: []float64{0, 1}, Y: []float64{0, 1}})
	if err == nil {
		err = Show(p)
	}
	if err != nil {
		fmt.Println("Show:", err)
		os.Exit(1)
	}
	fmt.Println("shown")
}
