package ref

import "math"

// DeltaRuleChunked runs the gated delta rule for one value head in chunks of C tokens (model.md §4.3
// step 8, transformers' torch_chunk_gated_delta_rule), starting from and updating S. T is padded with
// zero rows up to a multiple of C (zero q, k, v, β, g leave S unchanged). Per chunk (i, j ∈ [0, C)):
//
//	Γ_i = Σ_{j≤i} g_j;  D_ij = exp(Γ_i − Γ_j) for j ≤ i, else 0
//	kβ_i = β_i k_i;  vβ_i = β_i v_i;  L = strictly-lower((Kβ Kᵀ) ⊙ D)
//	U = (I + L)⁻¹ Vβ;  W = (I + L)⁻¹ (Kβ ⊙ exp Γ);  Aqk = lower((Q Kᵀ) ⊙ D)   (diagonal included)
//	Vn = U − W S;  O = (Q ⊙ exp Γ) S + Aqk Vn;  S = S·exp(Γ_{C−1}) + (K ⊙ exp(Γ_{C−1} − Γ))ᵀ Vn
//
// The triangular systems are solved by forward substitution. Every product accumulates in float64 and
// is stored as float32. It equals DeltaRuleRecurrent up to float32 rounding.
//
// S: [Dk·Dv]; q, k: [T][Dk] (normalised, q scaled); v: [T][Dv]; g, beta: [T] → o: [T][Dv].
// Inputs are not modified.
func DeltaRuleChunked(S []float32, q, k, v [][]float32, g, beta []float32, C int) [][]float32 {
	T := len(q)
	if T == 0 {
		return nil
	}
	dk, dv := len(q[0]), len(v[0])
	o := make([][]float32, 0, T)
	zk, zv := make([]float32, dk), make([]float32, dv)
	for base := 0; base < T; base += C {
		// One chunk, zero-padded: Q, K: [C][Dk], V: [C][Dv], G, B: [C].
		Q, K, V := make([][]float32, C), make([][]float32, C), make([][]float32, C)
		G, B := make([]float32, C), make([]float32, C)
		for i := 0; i < C; i++ {
			if base+i < T {
				Q[i], K[i], V[i], G[i], B[i] = q[base+i], k[base+i], v[base+i], g[base+i], beta[base+i]
			} else {
				Q[i], K[i], V[i] = zk, zk, zv
			}
		}
		out := deltaChunk(S, Q, K, V, G, B)
		o = append(o, out[:min(C, T-base)]...)
	}
	return o
}

// deltaChunk processes one full chunk (see DeltaRuleChunked) and returns its C output rows.
func deltaChunk(S []float32, Q, K, V [][]float32, G, B []float32) [][]float32 {
	C, dv := len(Q), len(V[0])
	// Γ: cumulative log-decay inside the chunk, accumulated in float64.
	gamma := make([]float32, C)
	var acc float64
	for i := range G {
		acc += float64(G[i])
		gamma[i] = float32(acc)
	}
	// D: [C][C] decay mask; Kβ: [C][Dk]; Vβ: [C][Dv].
	D := make([][]float32, C)
	kb, vb := make([][]float32, C), make([][]float32, C)
	for i := 0; i < C; i++ {
		D[i] = make([]float32, C)
		for j := 0; j <= i; j++ {
			D[i][j] = float32(math.Exp(float64(gamma[i] - gamma[j])))
		}
		kb[i], vb[i] = scaled(K[i], B[i]), scaled(V[i], B[i])
	}
	// L = strictly-lower((Kβ Kᵀ) ⊙ D): [C][C].
	L := make([][]float32, C)
	for i := 0; i < C; i++ {
		L[i] = make([]float32, i)
		for j := 0; j < i; j++ {
			L[i][j] = dot(kb[i], K[j]) * D[i][j]
		}
	}
	// U = (I + L)⁻¹ Vβ: [C][Dv];  W = (I + L)⁻¹ (Kβ ⊙ exp Γ): [C][Dk] — by forward substitution,
	// as transformers' solve_triangular(unitriangular=True).
	kg := make([][]float32, C)
	for j := range kg {
		kg[j] = scaled(kb[j], float32(math.Exp(float64(gamma[j]))))
	}
	U, W := forwardSubstitute(L, vb), forwardSubstitute(L, kg)

	// Vn = U − W S: [C][Dv].
	vn := make([][]float32, C)
	for i := range vn {
		ws := vecMat(W[i], S, dv)
		vn[i] = make([]float32, dv)
		for j := range vn[i] {
			vn[i][j] = U[i][j] - ws[j]
		}
	}
	// O = (Q ⊙ exp Γ) S + Aqk Vn with Aqk = lower((Q Kᵀ) ⊙ D): [C][Dv].
	aqk := make([][]float32, C)
	for i := range aqk {
		aqk[i] = make([]float32, C)
		for j := 0; j <= i; j++ {
			aqk[i][j] = dot(Q[i], K[j]) * D[i][j]
		}
	}
	local := matMul(aqk, vn)
	out := make([][]float32, C)
	for i := range out {
		inter := vecMat(scaled(Q[i], float32(math.Exp(float64(gamma[i])))), S, dv)
		out[i] = make([]float32, dv)
		for j := range out[i] {
			out[i][j] = inter[j] + local[i][j]
		}
	}
	// S = S·exp(Γ_last) + (K ⊙ exp(Γ_last − Γ))ᵀ Vn.
	last := gamma[C-1]
	kd := make([][]float32, C)
	for i := range kd {
		kd[i] = scaled(K[i], float32(math.Exp(float64(last-gamma[i]))))
	}
	decay := float32(math.Exp(float64(last)))
	dk := len(K[0])
	for d := 0; d < dk; d++ {
		for j := 0; j < dv; j++ {
			var s float64
			for i := 0; i < C; i++ {
				s += float64(kd[i][d]) * float64(vn[i][j])
			}
			S[d*dv+j] = float32(S[d*dv+j]*decay) + float32(s)
		}
	}
	return out
}

// forwardSubstitute solves (I + L) X = B for unit-lower-triangular I + L:
// X_i = B_i − Σ_{j<i} L_ij X_j. L: [C][i] (row i holds columns 0..i−1); B: [C][N] → X: [C][N].
func forwardSubstitute(L, B [][]float32) [][]float32 {
	X := make([][]float32, len(B))
	for i := range B {
		X[i] = make([]float32, len(B[i]))
		for n := range X[i] {
			var s float64
			for j := 0; j < i; j++ {
				s += float64(L[i][j]) * float64(X[j][n])
			}
			X[i][n] = B[i][n] - float32(s)
		}
	}
	return X
}

// scaled returns x·s as a new slice.
func scaled(x []float32, s float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = v * s
	}
	return out
}

// matMul is A B for A: [M][N], B: [N][P] → [M][P], accumulated in float64.
func matMul(A, B [][]float32) [][]float32 {
	p := len(B[0])
	out := make([][]float32, len(A))
	acc := make([]float64, p)
	for i := range A {
		clear(acc)
		for n, a := range A[i] {
			if a == 0 {
				continue
			}
			for j := 0; j < p; j++ {
				acc[j] += float64(a) * float64(B[n][j])
			}
		}
		out[i] = make([]float32, p)
		for j := range acc {
			out[i][j] = float32(acc[j])
		}
	}
	return out
}
