package main

import "strings"

// asyncPreemptOffEnv returns environ with asyncpreemptoff=1 added to GODEBUG, and whether that
// changed anything: false when GODEBUG already says something about asyncpreemptoff. An existing
// GODEBUG entry is extended in place, never duplicated: the runtime reads the first GODEBUG it
// finds, so an appended second one would be ignored and the re-exec would repeat forever.
func asyncPreemptOffEnv(environ []string) ([]string, bool) {
	out := make([]string, 0, len(environ)+1)
	found := false
	for _, kv := range environ {
		v, isGodebug := strings.CutPrefix(kv, "GODEBUG=")
		if !isGodebug || found {
			if !isGodebug {
				out = append(out, kv)
			}
			continue
		}
		if strings.Contains(v, "asyncpreemptoff=") {
			return environ, false
		}
		found = true
		if v != "" {
			v += ","
		}
		out = append(out, "GODEBUG="+v+"asyncpreemptoff=1")
	}
	if !found {
		out = append(out, "GODEBUG=asyncpreemptoff=1")
	}
	return out, true
}
