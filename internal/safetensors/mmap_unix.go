//go:build unix

package safetensors

import (
	"os"
	"syscall"
)

// mmapFile maps size bytes of fd read-only and shared, and asks for huge pages (mmap_linux.go).
func mmapFile(fd *os.File, size int) ([]byte, error) {
	b, err := syscall.Mmap(int(fd.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	adviseHuge(fd, b)
	return b, nil
}

func munmap(b []byte) error { return syscall.Munmap(b) }
