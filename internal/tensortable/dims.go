package tensortable

import "fmt"

// LayerKind is the token mixer of one decoder layer.
type LayerKind int

const (
	// LinearAttention is a Gated DeltaNet layer ("linear_attention" in layer_types).
	LinearAttention LayerKind = iota + 1
	// FullAttention is a gated GQA attention layer ("full_attention" in layer_types).
	FullAttention
)

// String is the kind's layer_types spelling in config.json.
func (k LayerKind) String() string {
	switch k {
	case LinearAttention:
		return "linear_attention"
	case FullAttention:
		return "full_attention"
	}
	return fmt.Sprintf("LayerKind(%d)", int(k))
}

// Interleaved is the layer pattern transformers builds from full_attention_interval: layer i of n
// is full attention iff (i+1) % interval == 0, DeltaNet otherwise. An interval below 1 (which
// config validation rejects) marks no layer full; n below 0 is no layers.
func Interleaved(n, interval int) []LayerKind {
	kinds := make([]LayerKind, max(n, 0))
	for i := range kinds {
		kinds[i] = LinearAttention
		if interval >= 1 && (i+1)%interval == 0 {
			kinds[i] = FullAttention
		}
	}
	return kinds
}

// Dims are the model's sizes, named as in model.md §1.2: the one struct the loader, the writers,
// the engines, the performance model and the memory budget read them from. checkpoint.Config.Dims
// derives it from config.json.
type Dims struct {
	H, Vocab   int
	LayerTypes []LayerKind // one per decoder layer
	Hq, Hkv, D int         // full attention: query and KV heads, head dim
	Rot        int         // full attention: the leading head dims RoPE rotates
	Hk, Hv     int         // DeltaNet: key and value heads
	Dk, Dv     int         // DeltaNet: key and value head dims
	K          int         // DeltaNet: conv kernel taps
	E, TopK    int         // MoE: experts, and experts per token
	I, Is      int         // MoE: expert and shared-expert intermediate sizes
}

// CheckGroups checks what the sizes must satisfy beyond being positive, in config.json's names:
// the query heads group evenly over the KV heads, the DeltaNet value heads over its key heads, and
// top-k fits in the experts.
func (d Dims) CheckGroups() error {
	switch {
	case d.Hkv <= 0 || d.Hq%d.Hkv != 0:
		return fmt.Errorf("num_attention_heads %d is not a multiple of num_key_value_heads %d", d.Hq, d.Hkv)
	case d.Hk <= 0 || d.Hv%d.Hk != 0:
		return fmt.Errorf("linear_num_value_heads %d is not a multiple of linear_num_key_heads %d", d.Hv, d.Hk)
	case d.TopK > d.E:
		return fmt.Errorf("num_experts_per_tok %d exceeds num_experts %d", d.TopK, d.E)
	}
	return nil
}

// NumLayers is the number of decoder layers.
func (d Dims) NumLayers() int { return len(d.LayerTypes) }

// IsFull reports whether layer i is full attention.
func (d Dims) IsFull(i int) bool { return d.LayerTypes[i] == FullAttention }

// Count is the number of layers of kind k.
func (d Dims) Count(k LayerKind) int {
	n := 0
	for _, t := range d.LayerTypes {
		if t == k {
			n++
		}
	}
	return n
}

// KeyDim is the DeltaNet query/key width: Hk·Dk.
func (d Dims) KeyDim() int { return d.Hk * d.Dk }

// ValueDim is the DeltaNet value width: Hv·Dv.
func (d Dims) ValueDim() int { return d.Hv * d.Dv }

// ConvDim is the DeltaNet conv's channel count, 2·Hk·Dk + Hv·Dv, in the order [q | k | v].
func (d Dims) ConvDim() int { return 2*d.KeyDim() + d.ValueDim() }

// DeltaNetState is the floats of one DeltaNet layer's state: the recurrent state [Hv, Dk, Dv] and
// the conv's last K−1 inputs [K−1, C].
func (d Dims) DeltaNetState() int { return d.Hv*d.Dk*d.Dv + d.ConvDim()*(d.K-1) }

// KVWidth is the cached K (or V) values of one position in one attention layer: Hkv·D.
func (d Dims) KVWidth() int { return d.Hkv * d.D }
