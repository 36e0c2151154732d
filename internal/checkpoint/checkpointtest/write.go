package checkpointtest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/lily-engine/lily/internal/safetensors"
)

// NormValue is the value Write stores at index i of every 1-D BF16 tensor (norms, A_log,
// dt_bias), so tests can check how the loader converts them. It is exact in bfloat16.
func NormValue(i int) float32 { return float32(i%16-8) / 64 }

// Write writes config.json and the
// tensors of specs as model.safetensors (shards <= 1) or as that many shards plus
// model.safetensors.index.json. Matrix data is random (seeded); 1-D tensors hold NormValue.
func Write(dir string, config []byte, specs []Spec, shards int, seed uint64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), config, 0o644); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	if shards <= 1 {
		return WriteSafetensors(filepath.Join(dir, "model.safetensors"), specs, rng)
	}
	weightMap := map[string]string{}
	for s := 0; s < shards; s++ {
		var part []Spec
		for i := s; i < len(specs); i += shards {
			part = append(part, specs[i])
		}
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", s+1, shards)
		for _, sp := range part {
			weightMap[sp.Name] = name
		}
		if err := WriteSafetensors(filepath.Join(dir, name), part, rng); err != nil {
			return err
		}
	}
	idx, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": weightMap})
	return os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), idx, 0o644)
}

// WriteGeneration writes generation_config.json with the given eos ids.
func WriteGeneration(dir string, eos ...int) error {
	b, _ := json.Marshal(map[string]any{"eos_token_id": eos, "do_sample": true})
	return os.WriteFile(filepath.Join(dir, "generation_config.json"), b, 0o644)
}

// WriteSafetensors writes one safetensors file holding specs, filled as Write describes; a nil
// rng means a fixed seed.
func WriteSafetensors(path string, specs []Spec, rng *rand.Rand) error {
	if rng == nil {
		rng = rand.New(rand.NewPCG(0, 1))
	}
	hdr := map[string]any{"__metadata__": map[string]string{"format": "test"}}
	var data []byte
	for _, s := range specs {
		n := s.DType.Size()
		for _, d := range s.Shape {
			n *= d
		}
		b := make([]byte, n)
		fill(b, s, rng)
		hdr[s.Name] = map[string]any{"dtype": s.DType.String(), "shape": s.Shape,
			"data_offsets": []int{len(data), len(data) + n}}
		data = append(data, b...)
	}
	j, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	j = append(j, []byte(strings.Repeat(" ", (8-len(j)%8)%8))...)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(j)))
	out = append(append(out, j...), data...)
	return os.WriteFile(path, out, 0o644)
}

// fill writes a tensor's bytes: NormValue for 1-D BF16, small normal values rounded to bf16
// (safetensors.Float32ToBF16) for other BF16, random words for U32.
func fill(b []byte, s Spec, rng *rand.Rand) {
	if s.DType != safetensors.BF16 {
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return
	}
	for i := 0; i < len(b)/2; i++ {
		v := NormValue(i)
		if len(s.Shape) != 1 {
			v = float32(rng.NormFloat64() * 0.05)
		}
		binary.LittleEndian.PutUint16(b[2*i:], safetensors.Float32ToBF16(v))
	}
}
