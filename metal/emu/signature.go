package emu

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Param is one kernel parameter as the source declares it.
type Param struct {
	Type    string // C type as written, e.g. "const device uint*" or "constant Dims&"
	Name    string
	Buffer  int    // buffer index for [[buffer(n)]] parameters, else -1
	Builtin string // attribute name for builtins (thread_position_in_grid, ...), else ""
}

// Kernel is a kernel function's declared signature.
type Kernel struct {
	Name   string
	Params []Param
}

var kernelStart = regexp.MustCompile(`\bkernel\s+void\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(`)

// ParseKernels finds every `kernel void name(...)` in src and parses its parameter list. Each
// parameter must carry either [[buffer(n)]] or a builtin attribute.
func ParseKernels(src string) ([]Kernel, error) {
	var out []Kernel
	for _, m := range kernelStart.FindAllStringSubmatchIndex(src, -1) {
		name := src[m[2]:m[3]]
		depth, end := 1, -1
		for i := m[1]; i < len(src); i++ {
			switch src[i] {
			case '(':
				depth++
			case ')':
				depth--
			}
			if depth == 0 {
				end = i
				break
			}
		}
		if end < 0 {
			return nil, fmt.Errorf("kernel %s: unterminated parameter list", name)
		}
		k := Kernel{Name: name}
		for _, raw := range splitTop(src[m[1]:end]) {
			p, err := parseParam(raw)
			if err != nil {
				return nil, fmt.Errorf("kernel %s: %w", name, err)
			}
			k.Params = append(k.Params, p)
		}
		out = append(out, k)
	}
	return out, nil
}

// splitTop splits on commas outside brackets and parentheses.
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '<':
			depth++
		case ')', ']', '>':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	if strings.TrimSpace(s[start:]) != "" {
		parts = append(parts, s[start:])
	}
	return parts
}

var attrRe = regexp.MustCompile(`\[\[\s*([A-Za-z_]+)\s*(?:\(\s*(\d+)\s*\))?\s*\]\]`)

func parseParam(raw string) (Param, error) {
	raw = strings.Join(strings.Fields(raw), " ")
	a := attrRe.FindStringSubmatchIndex(raw)
	if a == nil {
		return Param{}, fmt.Errorf("parameter %q has no [[attribute]]", raw)
	}
	decl := strings.TrimSpace(raw[:a[0]])
	attr := raw[a[2]:a[3]]
	i := strings.LastIndexAny(decl, " *&")
	if i < 0 || i == len(decl)-1 {
		return Param{}, fmt.Errorf("parameter %q: cannot split type and name", raw)
	}
	p := Param{Type: strings.TrimSpace(decl[:i+1]), Name: decl[i+1:], Buffer: -1}
	if attr == "buffer" {
		if a[4] < 0 {
			return Param{}, fmt.Errorf("parameter %q: buffer without index", raw)
		}
		n, _ := strconv.Atoi(raw[a[4]:a[5]])
		if n >= 31 {
			return Param{}, fmt.Errorf("parameter %q: buffer index %d out of range", raw, n)
		}
		p.Buffer = n
		return p, nil
	}
	if !builtins[attr] {
		return Param{}, fmt.Errorf("parameter %q: unsupported attribute %q", raw, attr)
	}
	p.Builtin = attr
	return p, nil
}

// builtins are the thread-position attributes the emulator provides (lily_emu::Builtins).
var builtins = map[string]bool{
	"thread_position_in_grid": true, "thread_position_in_threadgroup": true,
	"threadgroup_position_in_grid": true, "threads_per_threadgroup": true, "threadgroups_per_grid": true,
	"threads_per_grid": true, "thread_index_in_threadgroup": true, "thread_index_in_simdgroup": true,
	"simdgroup_index_in_threadgroup": true, "threads_per_simdgroup": true, "simdgroups_per_threadgroup": true,
}

// vectorBuiltins are the uint3 builtins; a scalar parameter of one of them gets its x component.
var vectorBuiltins = map[string]bool{
	"thread_position_in_grid": true, "thread_position_in_threadgroup": true, "threadgroup_position_in_grid": true,
	"threads_per_threadgroup": true, "threadgroups_per_grid": true, "threads_per_grid": true,
}

// wrapper is the C++ adapter that calls k with its buffers and builtins.
func (k Kernel) wrapper() string {
	var args []string
	for _, p := range k.Params {
		if p.Buffer >= 0 {
			t := strings.TrimSpace(strictType(p.Type))
			switch {
			case strings.HasPrefix(t, "lily_emu::dptr<"):
				args = append(args, fmt.Sprintf("%s::bind(%d, %q)", t, p.Buffer, p.Name))
			case strings.HasSuffix(t, "&"):
				base := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(strings.TrimSuffix(t, "&")), "constant"))
				args = append(args, fmt.Sprintf("lily_emu::bind_constant<%s>(%d, %q)", base, p.Buffer, p.Name))
			default:
				args = append(args, fmt.Sprintf("lily_emu::bind_constant<%s>(%d, %q)", t, p.Buffer, p.Name))
			}
			continue
		}
		v := "b." + p.Builtin
		base := strings.TrimSpace(strings.TrimPrefix(p.Type, "const "))
		switch base {
		case "uint3":
			args = append(args, v)
		case "uint2", "ushort2":
			args = append(args, fmt.Sprintf("%s(%s.x, %s.y)", base, v, v))
		default:
			if vectorBuiltins[p.Builtin] {
				v += ".x"
			}
			args = append(args, fmt.Sprintf("(%s)%s", base, v))
		}
	}
	return fmt.Sprintf("static void lily_w_%s(const lily_emu::Builtins& b) { (void)b; %s(%s); }\n", k.Name, k.Name, strings.Join(args, ", "))
}
