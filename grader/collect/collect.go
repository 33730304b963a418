// Package collect reads students' submissions out of their homes and
// writes their feedback back, as root, without running anything as a
// student.
//
// grade-class.sh once read each file with `setpriv --reuid=STUDENT cat`:
// a process of the student's uid in the instructor's root session, which
// the student could ptrace (and push keystrokes into the instructor's
// terminal with TIOCSTI), and which a FIFO in place of the file blocked
// forever. Here root does the reading itself, in Go, and trusts no name in
// the student's home:
//
//   - every folder from the home down is opened relative to the one above
//     with O_NOFOLLOW|O_DIRECTORY, so a symbolic link anywhere on the path
//     is refused rather than followed, and a name swapped between two
//     checks cannot redirect a later step (each step holds a descriptor);
//   - every folder and the file must belong to the student and lie on the
//     home's file system (no mount of theirs, FUSE included, is entered);
//   - the file is opened with O_PATH first and examined: only a regular
//     file with one link (a hard link to another's file is refused) and at
//     most MaxBytes is ever opened for reading, so a FIFO, a device or a
//     socket is never opened at all;
//   - each student has a deadline: a read that does not end in time (a
//     file system that stalls) costs that student a row, not the class.
//
// Writing back mirrors it: folders are created or entered without following
// links, the file is written to a temporary name with O_EXCL, given to the
// student, synced and renamed over the old one, so a link planted where the
// feedback goes is replaced, never followed.
package collect

import (
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"strings"
	"time"
)

// MaxBytes is the largest file Read accepts: a source file of the course
// is a few KiB.
const MaxBytes = 1 << 20

// Deadline bounds the work for one student.
const Deadline = 10 * time.Second

// Student is an account whose home the grader reads.
type Student struct {
	Name     string
	UID, GID int
	Home     string
}

// Lookup finds a student's account.
func Lookup(name string) (Student, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return Student{}, fmt.Errorf("collect: no account %q: %w", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return Student{}, fmt.Errorf("collect: account %q has uid %q, gid %q", name, u.Uid, u.Gid)
	}
	if uid == 0 {
		return Student{}, fmt.Errorf("collect: %q is root, not a student", name)
	}
	if !strings.HasPrefix(u.HomeDir, "/") {
		return Student{}, fmt.Errorf("collect: %q's home %q is not an absolute path", name, u.HomeDir)
	}
	return Student{Name: name, UID: uid, GID: gid, Home: u.HomeDir}, nil
}

// ErrRefused marks a submission the grader will not read: the message says
// why, in words for the student.
var ErrRefused = errors.New("could not read your submission")

// refused returns an error that wraps ErrRefused.
func refused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

// splitRel checks a path relative to the home and returns its parts.
func splitRel(rel string) ([]string, error) {
	if rel == "" || strings.HasPrefix(rel, "/") {
		return nil, fmt.Errorf("collect: %q is not a path relative to the home", rel)
	}
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return nil, fmt.Errorf("collect: %q has an empty, . or .. part", rel)
		}
	}
	return parts, nil
}

// withDeadline runs f and gives up after d: a read stuck in a file system
// leaves its goroutine behind, and the caller goes on.
func withDeadline(d time.Duration, what string, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return refused("%s did not finish within %s", what, d)
	}
}
