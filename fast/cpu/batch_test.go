package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// TestQMatVecsEqualsOneByOne: a batch computes exactly what the single mat-vecs do, bit for bit
// (same row kernels, same per-row order), for any mix of 4/8-bit, float32 and int16 inputs and
// sizes, shared and distinct inputs, on pools of 1 to 3 workers.
func TestQMatVecsEqualsOneByOne(t *testing.T) {
	for _, workers := range []int{1, 2, 3} {
		p := NewPool(workers)
		defer p.Close()
		for name, k := range variants(p) {
			t.Run(name, func(t *testing.T) {
				rapid.Check(t, func(t *rapid.T) {
					r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 5))
					n := rapid.IntRange(1, 12).Draw(t, "jobs")
					in := GroupSize * rapid.IntRange(1, 40).Draw(t, "groups")
					shared := NewVec(in)
					shared.PrepareQ16(randVec(r, in))
					jobs := make([]MatVec, n)
					want := make([][]float32, n)
					for i := range jobs {
						bits, out, _ := drawShape(t)
						v := shared
						if rapid.Bool().Draw(t, "own input") {
							v = NewVec(in)
							v.PrepareQ16(randVec(r, in))
						}
						jobs[i] = MatVec{Y: make([]float32, out), M: randQMat(r, bits, out, in), V: v, Q16: rapid.Bool().Draw(t, "q16")}
						want[i] = make([]float32, out)
						if jobs[i].Q16 {
							k.QMatVecQ16(want[i], jobs[i].M, v)
						} else {
							k.QMatVec(want[i], jobs[i].M, v)
						}
					}
					k.QMatVecs(jobs)
					for i, j := range jobs {
						for o := range j.Y {
							if math.Float32bits(j.Y[o]) != math.Float32bits(want[i][o]) {
								t.Fatalf("job %d (%d-bit [%d,%d] q16 %v) row %d: batch %g, alone %g",
									i, j.M.Bits, j.M.Out, in, j.Q16, o, j.Y[o], want[i][o])
							}
						}
					}
				})
			})
		}
	}
}

// TestBatchAfter checks where QMatVecs's takes aim their last prefetches (batchTask.after): inside
// a take, the next mat-vec from its first row; at a take's end, the block no worker has claimed
// yet, in whichever mat-vec holds it; nothing once every block is claimed, or where no pool runs
// the task (inline: no other take follows).
func TestBatchAfter(t *testing.T) {
	r := newRand(9)
	ms := []*QMat{randQMat(r, 4, 64, 512), randQMat(r, 4, 24, 512), randQMat(r, 4, 40, 512)}
	p := NewPool(2)
	defer p.Close()
	tk := &batchTask{pool: p, ends: []int{8, 11, 16}} // 64/8, +3 (24 rows), +5 (40 rows)
	for _, m := range ms {
		tk.jobs = append(tk.jobs, MatVec{M: m})
	}
	check := func(what string, gotM *QMat, gotRow int, wantM *QMat, wantRow int) {
		t.Helper()
		if gotM != wantM || gotRow != wantRow {
			t.Fatalf("%s: after names matrix %p row %d, want %p row %d", what, gotM, gotRow, wantM, wantRow)
		}
	}
	m, row := tk.after(8, 12) // the take goes on into mat-vec 1
	check("inside a take", m, row, ms[1], 0)
	p.next.Store(13) // blocks before 13 claimed: mat-vec 2's row (13-11)·8
	m, row = tk.after(12, 12)
	check("a take's end", m, row, ms[2], 16)
	p.next.Store(16)
	m, row = tk.after(16, 16)
	check("all claimed", m, row, nil, 0)
	tk.pool = nil
	m, row = tk.after(12, 12)
	check("inline", m, row, nil, 0)
}
