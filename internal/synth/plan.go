package synth

import (
	"fmt"
	"math"
	"sort"

	"github.com/lily-engine/lily/internal/safetensors"
)

// Layout is a checkpoint convention (model.md §2.1 and §2.3).
type Layout int

const (
	// LayoutHF is the transformers bf16 layout: model.language_model.*, fused experts, conv [C,1,K],
	// zero-centred norms.
	LayoutHF Layout = iota + 1
	// LayoutMLX is the mlx-community 4-bit layout: language_model.model.*, switch_mlp, conv [C,K,1],
	// +1 baked into the norms, 4-bit group-64 affine quantization with an 8-bit router.
	LayoutMLX
)

// ParseLayout maps "hf" or "mlx" to a Layout.
func ParseLayout(s string) (Layout, error) {
	switch s {
	case "hf":
		return LayoutHF, nil
	case "mlx":
		return LayoutMLX, nil
	}
	return 0, fmt.Errorf("unknown layout %q (want hf or mlx)", s)
}

// String returns "hf" or "mlx".
func (l Layout) String() string {
	switch l {
	case LayoutHF:
		return "hf"
	case LayoutMLX:
		return "mlx"
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

// Default shard limits: transformers' max_shard_size "5GB" is decimal, mlx-lm's 5 GB is binary.
const (
	DefaultHFShardBytes  = 5_000_000_000
	DefaultMLXShardBytes = 5 << 30
)

// Tensor is one tensor of a plan: what it is called, how it is stored, and how it is generated.
type Tensor struct {
	Name  string
	DType safetensors.DType
	Shape []int
	Init  Init
}

// Bytes is the size of the tensor's data.
func (t Tensor) Bytes() int64 { return t.Spec().Bytes() }

// Spec is the tensor's safetensors declaration.
func (t Tensor) Spec() safetensors.TensorSpec {
	return safetensors.TensorSpec{Name: t.Name, DType: t.DType, Shape: t.Shape}
}

// Shard is one safetensors file of a plan; Tensors are in file (data) order.
type Shard struct {
	File    string // base name, e.g. "model-00001-of-00004.safetensors"
	Tensors []Tensor
}

// Bytes is the total data size of the shard's tensors.
func (s Shard) Bytes() int64 {
	var n int64
	for _, t := range s.Tensors {
		n += t.Bytes()
	}
	return n
}

// Plan is a whole checkpoint before it is written: its configuration, layout and shards.
type Plan struct {
	Config Config
	Layout Layout
	Shards []Shard
}

// TotalBytes is the data size of all tensors (the index's metadata.total_size).
func (p *Plan) TotalBytes() int64 {
	var n int64
	for _, s := range p.Shards {
		n += s.Bytes()
	}
	return n
}

// NumTensors is the number of tensors in all shards.
func (p *Plan) NumTensors() int {
	n := 0
	for _, s := range p.Shards {
		n += len(s.Tensors)
	}
	return n
}

// NewPlan lays out every tensor of config c in layout l and groups them, in model order, into shards
// of at most maxShardBytes (0 for the layout's default; a tensor larger than the limit gets a shard of
// its own). Within a shard, tensors are ordered by element size, then name, as the reference
// safetensors library does, so every tensor is aligned to its element size.
func NewPlan(c Config, l Layout, maxShardBytes int64) (*Plan, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var ts []Tensor
	switch l {
	case LayoutHF:
		ts = hfTensors(c)
		if maxShardBytes == 0 {
			maxShardBytes = DefaultHFShardBytes
		}
	case LayoutMLX:
		ts = mlxTensors(c)
		if maxShardBytes == 0 {
			maxShardBytes = DefaultMLXShardBytes
		}
	default:
		return nil, fmt.Errorf("unknown layout %v", l)
	}
	if maxShardBytes < 0 {
		return nil, fmt.Errorf("max shard size must be positive, got %d", maxShardBytes)
	}
	for _, t := range ts {
		if t.Bytes() < 0 {
			return nil, fmt.Errorf("tensor %q: shape %v overflows", t.Name, t.Shape)
		}
	}
	groups := splitShards(ts, maxShardBytes)
	p := &Plan{Config: c, Layout: l, Shards: make([]Shard, len(groups))}
	for i, g := range groups {
		sort.SliceStable(g, func(a, b int) bool {
			sa, sb := g[a].DType.Size(), g[b].DType.Size()
			if sa != sb {
				return sa > sb
			}
			return g[a].Name < g[b].Name
		})
		p.Shards[i] = Shard{File: ShardName(i, len(groups)), Tensors: g}
	}
	return p, nil
}

// ShardName is the file name of shard i (from 0) of n: "model-0000k-of-0000n.safetensors".
func ShardName(i, n int) string { return fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, n) }

// splitShards cuts ts, in order, into groups of at most limit bytes each.
func splitShards(ts []Tensor, limit int64) [][]Tensor {
	var groups [][]Tensor
	var cur []Tensor
	var size int64
	for _, t := range ts {
		n := t.Bytes()
		if len(cur) > 0 && size+n > limit {
			groups = append(groups, cur)
			cur, size = nil, 0
		}
		cur = append(cur, t)
		size += n
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	return groups
}

// Value ranges of the small tensors (see Init for the matrices).
const (
	normSpread   = 0.05 // norms: 0 ± spread (HF zero-centred) or 1 ± spread
	aLogLo       = 1    // A_log = log(U(aLogLo, aLogHi))
	aLogHi       = 16   //
	dtBiasSpread = 0.1  // dt_bias = U(-spread, spread)
)

// uniformStd is an Init of a centred uniform with standard deviation std.
func uniformStd(std float64) Init {
	a := std * math.Sqrt(3)
	return Init{Kind: InitUniform, Lo: -a, Hi: a}
}

// around is an Init of a uniform in c ± spread.
func around(c, spread float64) Init { return Init{Kind: InitUniform, Lo: c - spread, Hi: c + spread} }

// fanIn is the standard deviation 1/sqrt(in) of a matrix with in inputs.
func fanIn(in int) float64 { return 1 / math.Sqrt(float64(in)) }

func bf16Tensor(name string, init Init, shape ...int) Tensor {
	return Tensor{Name: name, DType: safetensors.BF16, Shape: shape, Init: init}
}
