//go:build !linux

package cpu

import "fmt"

// mapReadBytes allocates n bytes on the heap: only Linux's buffers are mapped in huge pages (see
// readbuf_linux.go). free does nothing; the collector takes the buffer.
func mapReadBytes(n int) (b []byte, free func(), err error) {
	if n <= 0 {
		return nil, nil, fmt.Errorf("cpu: read buffer of %d bytes", n)
	}
	return make([]byte, n), func() {}, nil
}
