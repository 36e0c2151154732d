package checkpoint

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint/checkpointtest"
	"github.com/lily-engine/lily/internal/safetensors"
	"github.com/lily-engine/lily/internal/tensortable"
)

// micro is a 2-layer model (one DeltaNet, one attention layer) whose HF file is a few KiB, small
// enough for the fuzzer to mutate usefully.
func micro() checkpointtest.Dims {
	return checkpointtest.Dims{Dims: tensortable.Dims{H: 32, LayerTypes: tensortable.Interleaved(2, 2), Vocab: 8,
		Hq: 2, Hkv: 1, D: 8, Rot: 2, Hk: 1, Hv: 2, Dk: 8, Dv: 8, K: 4, E: 2, TopK: 1, I: 8, Is: 8},
		Bits: 4, GroupSize: 32, GateBits: 8}
}

// FuzzParseHeader mutates the JSON header of the micro model's file (its data section is
// zeros, sized to whatever the header claims, up to 1 MiB, and shared by every execution):
// whatever safetensors.ParseHeader accepts is handed to the weight loader with the micro
// config, which must return weights or an error, never panic. (The safetensors package fuzzes
// ParseHeader's own guarantees.)
func FuzzParseHeader(f *testing.F) {
	d := micro()
	cfg, err := ParseConfig(d.ConfigJSON("hf"), nil)
	if err != nil {
		f.Fatal(err)
	}
	p := filepath.Join(f.TempDir(), "model.safetensors")
	if err := checkpointtest.WriteSafetensors(p, d.Specs("hf"), nil); err != nil {
		f.Fatal(err)
	}
	file, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(file)
	f.Add(file[8 : 8+n])
	zeros := make([]byte, 1<<20) // read-only: the data section of every execution
	f.Fuzz(func(t *testing.T, header []byte) {
		var maxEnd int64
		var probe struct {
			Offsets map[string]struct {
				DataOffsets []int64 `json:"data_offsets"`
			}
		}
		_ = json.Unmarshal(append(append([]byte(`{"Offsets":`), header...), '}'), &probe)
		for _, e := range probe.Offsets {
			for _, o := range e.DataOffsets {
				maxEnd = max(maxEnd, min(o, 1<<20))
			}
		}
		// The data section is never built: ParseHeader needs only its size, and the tensors
		// read from one shared zero buffer, so an execution costs no more than its header.
		b := binary.LittleEndian.AppendUint64(make([]byte, 0, 8+len(header)), uint64(len(header)))
		b = append(b, header...)
		h, err := safetensors.ParseHeader(b, int64(len(b))+maxEnd)
		if err != nil {
			return
		}
		ts := map[string]Tensor{}
		for _, ti := range h.Tensors {
			data := zeros[ti.Begin:ti.End:ti.End]
			ts[ti.Name] = Tensor{Name: ti.Name, File: "fuzz", DType: ti.DType, Shape: ti.Shape, Data: data}
		}
		if w, l, err := build(cfg, ts); err == nil {
			computeStats(w, l)
		}
	})
}

// FuzzParseConfig checks that no config.json / generation_config.json makes ParseConfig panic
// and that what it accepts is internally consistent.
func FuzzParseConfig(f *testing.F) {
	f.Add(checkpointtest.Real().ConfigJSON("mlx"), []byte(`{"eos_token_id":[248046,248044]}`))
	f.Add(micro().ConfigJSON("hf"), []byte(`{"eos_token_id":1}`))
	f.Add([]byte(`{"num_hidden_layers":3,"layer_types":["full_attention"]}`), []byte(nil))
	f.Fuzz(func(t *testing.T, cfgJSON, gen []byte) {
		c, err := ParseConfig(cfgJSON, gen)
		if err != nil {
			return
		}
		if len(c.LayerTypes) != c.NumLayers || c.NumHeads%c.NumKVHeads != 0 ||
			c.LinearNumValueHeads%c.LinearNumKeyHeads != 0 || c.RotaryDim()%2 != 0 || c.RotaryDim() <= 0 {
			t.Fatalf("accepted inconsistent config %+v", c)
		}
	})
}
