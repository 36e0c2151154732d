//go:build unix && !linux

package safetensors

import "os"

// adviseHuge has no portable equivalent off Linux; the mapping stays as the kernel makes it.
func adviseHuge(*os.File, []byte) {}
