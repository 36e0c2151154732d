package cpu

// DeltaUpdate is the write pass of one gated delta-rule step on a state S: [dk, dv] (row i belongs
// to key dimension i): every row becomes S_i = decay·S_i + k_i·delta, and out = Σ_i q_i·S_i (the
// step's output Sᵀq) is accumulated from the new rows in the same pass, so the state is read and
// written once. s: [dk·dv]; k, q: [dk]; delta, out: [dv] (out is overwritten; it must not overlap
// delta).
func (k *Kernels) DeltaUpdate(s []float32, decay float32, kv, q, delta, out []float32) {
	dk, dv := len(kv), len(out)
	if len(q) != dk || len(delta) != dv || len(s) != dk*dv {
		panic("cpu: DeltaUpdate: shapes disagree")
	}
	k.f.deltaUpdate(s, decay, kv, q, delta, out)
}

// maxDeltaRows is the largest key dimension the SIMD DeltaUpdate stages on its stack.
const maxDeltaRows = 256

func deltaUpdatePortable(s []float32, decay float32, kv, q, delta, out []float32) {
	dv := len(out)
	clear(out)
	for i, ki := range kv {
		row := s[i*dv : (i+1)*dv]
		scaleAxpyPortable(row, decay, ki, delta)
		axpyPortable(out, q[i], row)
	}
}
