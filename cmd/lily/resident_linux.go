package main

import (
	"bytes"
	"os"
	"strconv"
)

// residentBytes returns the process's resident memory (VmRSS in /proc/self/status): anonymous
// memory plus the pages of the mapped checkpoint that are in RAM.
func residentBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := bytes.Fields(rest) // "123456 kB"
			if len(f) == 2 && string(f[1]) == "kB" {
				if kb, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
					return kb << 10, true
				}
			}
		}
	}
	return 0, false
}
