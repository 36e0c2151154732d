package diff

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lily-engine/lily/internal/safetensors"
	"github.com/lily-engine/lily/internal/trace"
)

// tensor is one tensor of a dump: its spec and the rows that make its data.
type tensor struct {
	spec safetensors.TensorSpec
	f32  [][]float32
	i32  []int32
}

// Dump writes t's intermediates to dir/<backend>.safetensors (dir is created if needed), for numpy
// or torch: for each point "<point>" F32 [positions, n] and "<point>.positions" I32 [positions];
// for each layer's router "L<n>.router.logits" F32 [positions, E], ".experts" I32 and ".weights"
// F32 [positions, k] (experts ascending) and ".positions". The metadata holds the token ids.
func Dump(dir string, t *Trace, prompt, decoded []int32) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("diff: dump: %w", err)
	}
	path := filepath.Join(dir, t.Backend+".safetensors")
	var ts []tensor
	for _, p := range t.Rec.Points() {
		pos := t.Rec.Positions(p)
		if len(pos) == 0 {
			continue
		}
		ps := make([]int32, len(pos))
		for i, v := range pos {
			ps[i] = int32(v)
		}
		name := p.String()
		if p.Site != trace.Router {
			rows := make([][]float32, len(pos))
			for i, v := range pos {
				rows[i] = t.Rec.Value(p, v)
			}
			ts = append(ts, f32Tensor(name, rows), i32Tensor(name+".positions", ps, len(ps)))
			continue
		}
		var logits, weights [][]float32
		var experts []int32
		k := 0
		for _, v := range pos {
			c, _ := t.Rec.Choice(p.Layer, v)
			logits, weights = append(logits, c.Logits), append(weights, c.Weights)
			for _, e := range c.IDs {
				experts = append(experts, int32(e))
			}
			k = len(c.IDs)
		}
		ts = append(ts, f32Tensor(name+".logits", logits), i32Tensor(name+".experts", experts, k),
			f32Tensor(name+".weights", weights), i32Tensor(name+".positions", ps, len(ps)))
	}
	specs := make([]safetensors.TensorSpec, len(ts))
	for i, x := range ts {
		specs[i] = x.spec
	}
	meta := map[string]string{"backend": t.Backend, "prompt_ids": joinIDs(prompt), "decoded_ids": joinIDs(decoded)}
	w, err := safetensors.Create(path, specs, meta)
	if err != nil {
		return "", fmt.Errorf("diff: dump: %w", err)
	}
	for _, x := range ts {
		err := w.WriteTensor(x.spec.Name, func(out io.Writer) error {
			for _, r := range x.f32 {
				if err := binary.Write(out, binary.LittleEndian, r); err != nil {
					return err
				}
			}
			if x.i32 != nil {
				return binary.Write(out, binary.LittleEndian, x.i32)
			}
			return nil
		})
		if err != nil {
			w.Close()
			return "", fmt.Errorf("diff: dump: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("diff: dump: %w", err)
	}
	return path, nil
}

// f32Tensor is rows (of equal length) as an F32 [len(rows), n] tensor.
func f32Tensor(name string, rows [][]float32) tensor {
	return tensor{spec: safetensors.TensorSpec{Name: name, DType: safetensors.F32, Shape: []int{len(rows), len(rows[0])}}, f32: rows}
}

// i32Tensor is v as an I32 tensor of rows of n values ([len(v)] when n is len(v)).
func i32Tensor(name string, v []int32, n int) tensor {
	shape := []int{len(v)}
	if n != len(v) && n > 0 {
		shape = []int{len(v) / n, n}
	}
	return tensor{spec: safetensors.TensorSpec{Name: name, DType: safetensors.I32, Shape: shape}, i32: v}
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, v := range ids {
		s[i] = strconv.Itoa(int(v))
	}
	return strings.Join(s, ",")
}
