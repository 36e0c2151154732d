//go:build unix

package safetensors

import (
	"os"
	"syscall"
)

// mmapFile maps size bytes of fd read-only and shared.
func mmapFile(fd *os.File, size int) ([]byte, error) {
	return syscall.Mmap(int(fd.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
}

func munmap(b []byte) error { return syscall.Munmap(b) }
