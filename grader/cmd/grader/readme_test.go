package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// courseRoot is the course checkout this test runs in.
const courseRoot = "../../.."

// readmeCommand is one grader command line of a README: its file and line
// and the arguments after the grader itself.
type readmeCommand struct {
	where string
	args  []string
}

// graderInvocation matches a command line that runs the grader: through
// go run, or the binary the README builds.
var graderInvocation = regexp.MustCompile(`^(?:go run \./grader/cmd/grader|(?:bin|\.)/grader)\s+(.*)$`)

// readmeCommands extracts the grader commands of the sh code blocks of
// the README at path (a comment after # is dropped).
func readmeCommands(t *testing.T, path string) []readmeCommand {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var cmds []readmeCommand
	inSh := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "```"):
			inSh = !inSh && (line == "```sh" || line == "```bash")
			continue
		case !inSh:
			continue
		}
		line, _, _ = strings.Cut(line, " #")
		if m := graderInvocation.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			where := fmt.Sprintf("%s/%s:%d", filepath.Base(filepath.Dir(path)), filepath.Base(path), n)
			cmds = append(cmds, readmeCommand{where: where, args: strings.Fields(m[1])})
		}
	}
	require.NoError(t, sc.Err())
	return cmds
}

// TestReadmeCommands: every grader command in the course's READMEs names a
// command that exists, flags it accepts, exercises and folders that
// exist; the cheap ones (check, grade) run as written, from the course
// root, and succeed.
func TestReadmeCommands(t *testing.T) {
	root, err := filepath.Abs(courseRoot)
	require.NoError(t, err)
	var cmds []readmeCommand
	for _, readme := range []string{"grader/README.md", "exercises/README.md", "solutions/README.md"} {
		cmds = append(cmds, readmeCommands(t, filepath.Join(root, readme))...)
	}
	require.GreaterOrEqual(t, len(cmds), 7, "grader/README.md shows every command")
	exercise := regexp.MustCompile(`^[0-9]{2}-[a-z0-9-]+$`)
	seen := map[string]bool{}
	for _, c := range cmds {
		name := c.args[0]
		seen[name] = true
		// Flags: the command parses them (an unknown flag or a missing
		// value is a usage error); -h stops it before it does anything.
		var stderr strings.Builder
		code := run(context.Background(), append(append([]string{}, c.args...), "-h"), &strings.Builder{}, &stderr)
		assert.Zero(t, code, "%s: grader %s: %s", c.where, strings.Join(c.args, " "), stderr.String())
		for i, a := range c.args {
			prev := ""
			if i > 0 {
				prev = c.args[i-1]
			}
			switch {
			case exercise.MatchString(a) && (prev == "--exercise" || name == "check" || name == "verify"):
				assert.DirExists(t, filepath.Join(root, "exercises", a), "%s: exercise %s", c.where, a)
			case (prev == "--submission" || prev == "--submissions") && !strings.HasPrefix(a, "/tmp/"):
				// A folder in /tmp is one a command before it writes
				// (solutions/write-variants.go).
				assert.DirExists(t, filepath.Join(root, a), "%s: %s %s", c.where, prev, a)
			}
		}
	}
	for _, name := range []string{"check", "verify", "grade", "batch", "bundle", "release"} {
		assert.True(t, seen[name], "grader/README.md shows grader %s", name)
	}
	if testing.Short() {
		t.Skip("running check and grade as written takes a few seconds each")
	}
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.NoError(t, os.Chdir(root))
	t.Cleanup(func() { os.Chdir(wd) })
	ran := 0
	for _, c := range cmds {
		if c.args[0] != "check" && c.args[0] != "grade" {
			continue
		}
		var stdout, stderr strings.Builder
		code := run(context.Background(), c.args, &stdout, &stderr)
		assert.Zero(t, code, "%s: grader %s:\n%s%s", c.where, strings.Join(c.args, " "), stdout.String(), stderr.String())
		ran++
	}
	assert.Positive(t, ran)
}

// TestReadmeCommandsCatchesMistakes: the checks above fail on a name that
// is not an exercise and on a flag that does not exist.
func TestReadmeCommandsCatchesMistakes(t *testing.T) {
	var stderr strings.Builder
	code := run(context.Background(), []string{"bundle", "--exercise", "01-storage-views", "--no-such-flag", "-h"}, &strings.Builder{}, &stderr)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "flag provided but not defined")
	_, err := os.Stat(filepath.Join(courseRoot, "exercises", "01-storage-views"))
	assert.ErrorIs(t, err, os.ErrNotExist, "01-storage-views is not an exercise")
}
