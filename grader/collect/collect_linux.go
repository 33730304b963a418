package collect

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Read returns the bytes of the file at rel inside the student's home
// (rel like "course/exercises/01-strided-copy/copy.go"). An error that
// wraps ErrRefused is the submission's fault (a link, a FIFO, a file of
// someone else's, too large, missing) and is meant for the student; any
// other is the grader's.
func Read(st Student, rel string) ([]byte, error) {
	parts, err := splitRel(rel)
	if err != nil {
		return nil, err
	}
	var data []byte
	err = withDeadline(Deadline, "reading "+rel, func() error {
		dir, dev, err := openHome(st)
		if err != nil {
			return err
		}
		for _, p := range parts[:len(parts)-1] {
			next, err := enter(st, dir, dev, p, rel, false)
			unix.Close(dir)
			if err != nil {
				return err
			}
			dir = next
		}
		defer unix.Close(dir)
		data, err = readFile(st, dir, dev, parts[len(parts)-1], rel)
		return err
	})
	return data, err
}

// Write puts data at rel inside the student's home, owned by the student
// with mode 0600, creating the missing folders (owned by the student, mode
// 0700). The old file is replaced only once the new one is complete.
func Write(st Student, rel string, data []byte) error {
	parts, err := splitRel(rel)
	if err != nil {
		return err
	}
	return withDeadline(Deadline, "writing "+rel, func() error {
		dir, dev, err := openHome(st)
		if err != nil {
			return err
		}
		for _, p := range parts[:len(parts)-1] {
			next, err := enter(st, dir, dev, p, rel, true)
			unix.Close(dir)
			if err != nil {
				return err
			}
			dir = next
		}
		defer unix.Close(dir)
		return writeFile(st, dir, parts[len(parts)-1], data)
	})
}

// openHome opens the student's home, which must be a folder of theirs (not
// a link), and returns it and its file system's device.
func openHome(st Student) (int, uint64, error) {
	fd, err := unix.Open(st.Home, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, 0, fmt.Errorf("collect: %s's home %s: %w", st.Name, st.Home, err)
	}
	var s unix.Stat_t
	if err := unix.Fstat(fd, &s); err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("collect: %s: %w", st.Home, err)
	}
	if int(s.Uid) != st.UID {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("collect: %s's home %s belongs to uid %d, not to them (%d)", st.Name, st.Home, s.Uid, st.UID)
	}
	return fd, s.Dev, nil
}

// enter opens the folder name inside dir without following a link, and
// checks that it is the student's, on the home's file system. With create,
// a missing folder is made, and given to the student.
func enter(st Student, dir int, dev uint64, name, rel string, create bool) (int, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) && create {
		if err := unix.Mkdirat(dir, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, fmt.Errorf("collect: %s: cannot make %s: %w", st.Name, name, err)
		}
		fd, err = unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			// Made by root inside the student's folder: theirs now. A
			// folder the student made there meanwhile stays theirs.
			var s unix.Stat_t
			if unix.Fstat(fd, &s) == nil && s.Uid == 0 {
				unix.Fchown(fd, st.UID, st.GID)
			}
		}
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		return -1, refused("%s is missing (no %s)", rel, name)
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		return -1, refused("%s: %s is a symbolic link or not a folder", rel, name)
	case err != nil:
		return -1, refused("%s: cannot open %s: %v", rel, name, err)
	}
	var s unix.Stat_t
	if err := unix.Fstat(fd, &s); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("collect: %s: %w", name, err)
	}
	if int(s.Uid) != st.UID {
		unix.Close(fd)
		return -1, refused("%s: the folder %s is not yours", rel, name)
	}
	if s.Dev != dev {
		unix.Close(fd)
		return -1, refused("%s: the folder %s is on another file system than your home", rel, name)
	}
	return fd, nil
}

// readFile reads name inside dir: a regular file of the student's, with
// one link, at most MaxBytes. It is looked at through an O_PATH descriptor
// and opened for reading only once it passed, through that descriptor, so
// that what is read is what was checked.
func readFile(st Student, dir int, dev uint64, name, rel string) ([]byte, error) {
	pfd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, refused("%s is missing", rel)
	}
	if err != nil {
		return nil, refused("%s: cannot open it: %v", rel, err)
	}
	defer unix.Close(pfd)
	var s unix.Stat_t
	if err := unix.Fstat(pfd, &s); err != nil {
		return nil, fmt.Errorf("collect: %s: %w", rel, err)
	}
	switch {
	case s.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, refused("%s is %s, not a regular file", rel, kind(s.Mode))
	case int(s.Uid) != st.UID:
		return nil, refused("%s is not your file", rel)
	case s.Nlink != 1:
		return nil, refused("%s has %d hard links; submit a plain copy", rel, s.Nlink)
	case s.Dev != dev:
		return nil, refused("%s is on another file system than your home", rel)
	case s.Size > MaxBytes:
		return nil, refused("%s is %d bytes; at most %d are read", rel, s.Size, MaxBytes)
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", pfd), unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("collect: reopening %s: %w", rel, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, refused("%s: %v", rel, err)
	}
	if len(data) > MaxBytes {
		return nil, refused("%s grew past %d bytes while it was read", rel, MaxBytes)
	}
	return data, nil
}

// writeFile writes data as name inside dir through a temporary name made
// with O_EXCL, then renames it over name: a link at name is replaced, not
// followed; a folder at name makes the rename fail.
func writeFile(st Student, dir int, name string, data []byte) error {
	removeStale(dir, name)
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	tmp := "." + name + ".tmp-" + hex.EncodeToString(b[:])
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("collect: %s: %w", st.Name, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Chown(st.UID, st.GID)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dir, tmp, dir, name)
	}
	if err != nil {
		unix.Unlinkat(dir, tmp, 0)
		return fmt.Errorf("collect: writing %s for %s: %w", name, st.Name, err)
	}
	return nil
}

// removeStale removes temporaries an interrupted Write left beside name.
func removeStale(dir int, name string) {
	fd, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	for _, n := range names {
		if strings.HasPrefix(n, "."+name+".tmp-") {
			var s unix.Stat_t
			if unix.Fstatat(dir, n, &s, unix.AT_SYMLINK_NOFOLLOW) == nil && s.Mode&unix.S_IFMT == unix.S_IFREG {
				unix.Unlinkat(dir, n, 0)
			}
		}
	}
}

// kind names a file's type for the student.
func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "a folder"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFIFO:
		return "a FIFO (named pipe)"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	}
	return "not a regular file"
}
