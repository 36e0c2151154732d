//go:build !unix

package safetensors

import (
	"io"
	"os"
)

// mmapFile reads the whole file where mmap is unavailable (not a lily target; kept so the
// package builds everywhere).
func mmapFile(fd *os.File, size int) ([]byte, error) {
	b := make([]byte, size)
	_, err := io.ReadFull(fd, b)
	return b, err
}

func munmap([]byte) error { return nil }
