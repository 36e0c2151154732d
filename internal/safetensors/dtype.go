// Package safetensors reads (memory-mapped, validated as untrusted input) and writes (streamed) the
// safetensors file format: an 8-byte little-endian header length, a JSON header, then the data.
package safetensors

// DType is the element type of a stored tensor.
type DType int

// The dtypes safetensors defines that lily accepts. Anything else in a header is an error.
const (
	Invalid DType = iota
	BF16
	F16
	F32
	F64
	U32
	I32
	I64
	U8
	I8
	BOOL
)

var dtypeNames = [...]string{Invalid: "", BF16: "BF16", F16: "F16", F32: "F32", F64: "F64",
	U32: "U32", I32: "I32", I64: "I64", U8: "U8", I8: "I8", BOOL: "BOOL"}

var dtypeSizes = [...]int{Invalid: 0, BF16: 2, F16: 2, F32: 4, F64: 8, U32: 4, I32: 4, I64: 8, U8: 1, I8: 1, BOOL: 1}

// String is the header spelling ("BF16", "U32", ...).
func (d DType) String() string {
	if d < 0 || int(d) >= len(dtypeNames) {
		return "INVALID"
	}
	return dtypeNames[d]
}

// Size is the element size in bytes (0 for Invalid).
func (d DType) Size() int {
	if d < 0 || int(d) >= len(dtypeSizes) {
		return 0
	}
	return dtypeSizes[d]
}

// ParseDType maps a header spelling to a DType; ok is false for unknown names.
func ParseDType(s string) (DType, bool) {
	for i, n := range dtypeNames {
		if i != 0 && n == s {
			return DType(i), true
		}
	}
	return Invalid, false
}
