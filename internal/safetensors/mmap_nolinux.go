//go:build unix && !linux

package safetensors

// adviseHuge has no portable equivalent off Linux; the mapping stays as the kernel makes it.
func adviseHuge([]byte) {}
