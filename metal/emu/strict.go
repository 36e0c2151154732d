package emu

import (
	"fmt"
	"regexp"
	"strings"
)

// The rewrite that gives the emulator its address spaces (include/lily_emu_memory.h): before g++
// compiles a kernel source, every `device T*` becomes a bounds-checked lily_emu::dptr<T> and every
// kernel-scope `threadgroup T name[N];` a poisoned, bounds-checked lily_emu::tgarray. The source on
// a real device is untouched.

var (
	devicePtr = regexp.MustCompile(`\b(?:(const)\s+)?device\s+(?:(const)\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*\*\s*`)
	tgArray   = regexp.MustCompile(`\bthreadgroup\s+([A-Za-z_][A-Za-z0-9_]*)\s+([A-Za-z_][A-Za-z0-9_]*)\s*\[([^\]\[;]+)\]\s*;`)
	tgAny     = regexp.MustCompile(`\bthreadgroup\b`)
)

// strictType is the C++ type the rewritten source uses for a parameter type as written.
func strictType(t string) string {
	return devicePtr.ReplaceAllStringFunc(t, func(m string) string {
		s := devicePtr.FindStringSubmatch(m)
		c := ""
		if s[1] != "" || s[2] != "" {
			c = "const "
		}
		return "lily_emu::dptr<" + c + s[3] + "> "
	})
}

// rewrite returns src with device pointers and threadgroup arrays in the emulator's checked types.
// A threadgroup declaration of another form (a pointer, a scalar, a 2-D array) is an error: the
// emulator could neither poison nor check it.
func rewrite(src string) (string, error) {
	out := strictType(src)
	out = tgArray.ReplaceAllString(out, "LILY_TG_ARRAY($1, $2, $3);")
	for _, line := range strings.Split(stripComments(out), "\n") {
		if tgAny.MatchString(line) {
			return "", fmt.Errorf("unsupported threadgroup declaration %q (the emulator handles `threadgroup T name[N];` at kernel scope)", strings.TrimSpace(line))
		}
	}
	return out, nil
}

// stripComments blanks // and /* */ comments, keeping line breaks.
func stripComments(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "//"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
			if i < len(s) {
				b.WriteByte('\n')
			}
		case strings.HasPrefix(s[i:], "/*"):
			j := strings.Index(s[i+2:], "*/")
			if j < 0 {
				return b.String()
			}
			b.WriteString(strings.Repeat("\n", strings.Count(s[i:i+2+j+2], "\n")))
			i += 2 + j + 1
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
