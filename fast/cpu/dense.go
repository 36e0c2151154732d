package cpu

import (
	"fmt"

	"github.com/lily-engine/lily/internal/safetensors"
)

// bf16Task is the pool task of one bf16 dense mat-vec.
type bf16Task struct {
	rows func(y []float32, w []uint16, in int, x []float32, lo, hi int)
	y, x []float32
	w    []uint16
	in   int
}

// Do runs row blocks [lo, hi) (rowBlock rows each).
func (t *bf16Task) Do(_, lo, hi int) {
	t.rows(t.y, t.w, t.in, t.x, lo*rowBlock, min(hi*rowBlock, len(t.y)))
}

// BF16MatVec computes y: [Out] = W: [Out, In] · x: [In] for a dense bf16 matrix (HF-layout
// checkpoints), accumulating in float32. Rows are split across the pool's workers.
func (k *Kernels) BF16MatVec(y []float32, w []uint16, out, in int, x []float32) {
	if len(w) < out*in || len(x) < in || len(y) < out {
		panic(fmt.Sprintf("cpu: BF16MatVec: W %d for [%d, %d], x [%d], y [%d]", len(w), out, in, len(x), len(y)))
	}
	if 2*out*in <= inlineBytes {
		k.f.bf16mv(y, w, in, x[:in], 0, out)
		return
	}
	k.bmv = bf16Task{rows: k.f.bf16mv, y: y[:out], w: w, in: in, x: x[:in]}
	k.pool.RunTask((out+rowBlock-1)/rowBlock, &k.bmv)
	k.bmv = bf16Task{}
}

// bf16RowsPortable computes rows [lo, hi) of y = W·x for bf16 W: [Out, In].
func bf16RowsPortable(y []float32, w []uint16, in int, x []float32, lo, hi int) {
	for o := lo; o < hi; o++ {
		row := w[o*in : (o+1)*in]
		var s0, s1 float32
		i := 0
		for ; i+2 <= in; i += 2 {
			s0 += safetensors.BF16ToFloat32(row[i]) * x[i]
			s1 += safetensors.BF16ToFloat32(row[i+1]) * x[i+1]
		}
		if i < in {
			s0 += safetensors.BF16ToFloat32(row[i]) * x[i]
		}
		y[o] = s0 + s1
	}
}
