package ggufexport

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/gguf"
)

// matrixF32 is matrix m dequantized to float32 (a [1, In] matrix as the vector ne: [In]).
func matrixF32(ctx context.Context, name string, m *checkpoint.Matrix, row RowFunc) gguf.Tensor {
	t := matrix(ctx, name, m, nil, nil, gguf.F32, row)
	if m.Experts == 0 && m.Out == 1 {
		t.Shape = t.Shape[:1]
	}
	return t
}

// vec is x as a float32 vector.
func vec(name string, x []float32) gguf.Tensor {
	return gguf.Tensor{Name: name, Shape: []int64{int64(len(x))}, Type: gguf.F32,
		Data: func(w io.Writer) error { _, err := w.Write(gguf.AppendF32(nil, x)); return err }}
}

// conv is the DeltaNet conv, c: [C, K] row-major, as ne: [K, C], channel i taken from
// channels[i].
func conv(name string, c []float32, channels []int, k int) gguf.Tensor {
	y := make([]float32, 0, len(c))
	for _, ch := range channels {
		y = append(y, c[ch*k:(ch+1)*k]...)
	}
	t := vec(name, y)
	t.Shape = []int64{int64(k), int64(len(channels))}
	return t
}

// matrix is m as a tensor of typ (ne: [In, Out] or [In, Out, Experts]). rows, when set, gives
// the source row of each output row within an expert; cols the source column of each output
// column.
func matrix(ctx context.Context, name string, m *checkpoint.Matrix, rows, cols []int, typ gguf.Type, row RowFunc) gguf.Tensor {
	shape := []int64{int64(m.In), int64(m.Out)}
	if m.Experts > 0 {
		shape = append(shape, int64(m.Experts))
	}
	return gguf.Tensor{Name: name, Shape: shape, Type: typ, Data: func(w io.Writer) error {
		if rows != nil && len(rows) != m.Out || cols != nil && len(cols) != m.In {
			return fmt.Errorf("matrix %s [%d, %d]: a permutation of %d rows and %d columns", m.Name, m.Out, m.In, len(rows), len(cols))
		}
		return writeRows(ctx, w, max(m.Experts, 1)*m.Out, m.In, typ, func(i int, dst, tmp []float32) error {
			e, r := i/m.Out, i%m.Out
			if rows != nil {
				r = rows[r]
			}
			if cols == nil {
				return row(m, e, r, dst)
			}
			if err := row(m, e, r, tmp); err != nil {
				return err
			}
			for j, c := range cols {
				dst[j] = tmp[c]
			}
			return nil
		})
	}}
}

// rowBatch is how many rows a worker converts at a time.
const rowBatch = 64

// writeRows writes n rows of width in, each produced by row (into dst, with tmp as scratch), as
// typ, converting batches of rows on every core and writing them in order, until ctx is done.
func writeRows(ctx context.Context, w io.Writer, n, in int, typ gguf.Type, row func(i int, dst, tmp []float32) error) error {
	workers := runtime.GOMAXPROCS(0)
	type batch struct {
		out []byte
		err error
	}
	bufs := make([]batch, workers)
	for b0 := 0; b0 < n; b0 += workers * rowBatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		var wg sync.WaitGroup
		for k := range bufs {
			lo := b0 + k*rowBatch
			hi := min(lo+rowBatch, n)
			bufs[k].out = bufs[k].out[:0]
			if lo >= hi {
				continue
			}
			wg.Add(1)
			go func(b *batch) {
				defer wg.Done()
				dst, tmp := make([]float32, in), make([]float32, in)
				for i := lo; i < hi; i++ {
					if b.err = row(i, dst, tmp); b.err != nil {
						return
					}
					if typ == gguf.F32 {
						b.out = gguf.AppendF32(b.out, dst)
					} else if b.out, b.err = gguf.QuantizeQ4_0(b.out, dst); b.err != nil {
						return
					}
				}
			}(&bufs[k])
		}
		wg.Wait()
		for k := range bufs {
			if bufs[k].err != nil {
				return bufs[k].err
			}
			if _, err := w.Write(bufs[k].out); err != nil {
				return err
			}
		}
	}
	return nil
}
