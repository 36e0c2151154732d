// Package safefile opens and reads the files a user points lily at without trusting them to be
// ordinary files: a named pipe, a device or a directory is refused before it is opened (opening a
// FIFO for reading blocks until a writer comes; /dev/zero never ends), and every read is bounded.
package safefile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Open opens path for reading if it is a regular file (symbolic links followed). The open is
// non-blocking, so a file swapped for a FIFO after the check cannot hang it either.
func Open(path string) (*os.File, fs.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if err := regular(path, st); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	if st, err = f.Stat(); err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := regular(path, st); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// regular explains why st is not a regular file.
func regular(path string, st fs.FileInfo) error {
	m := st.Mode()
	switch {
	case m.IsRegular():
		return nil
	case m&fs.ModeNamedPipe != 0:
		return fmt.Errorf("%s: a named pipe, not a regular file", path)
	case m&fs.ModeDevice != 0 || m&fs.ModeCharDevice != 0:
		return fmt.Errorf("%s: a device, not a regular file", path)
	case m.IsDir():
		return fmt.Errorf("%s: a directory, not a regular file", path)
	}
	return fmt.Errorf("%s: not a regular file (%v)", path, m.Type())
}

// TooLargeError is a file over the size its reader allows.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than the %d-byte limit for this file", e.Path, e.Limit)
}

// ReadFile reads the regular file at path, refusing one over limit bytes.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, st, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return ReadAll(f, path, limit)
}

// ReadAll reads r to the end, refusing more than limit bytes (path names it in the error).
func ReadAll(r io.Reader, path string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return b, nil
}
