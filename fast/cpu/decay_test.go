package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// decayTol is the decay kernels' relative budget against float64: the float32 exp (exp16, within a
// few ulp) and two float32 multiplies, 16 ulp in all.
const decayTol = 16 * 0x1p-24

// checkDecayed compares a decay kernel's result with the float64 value want of the same term whose
// decay factor is fac: 0 where fac or want is under DecayTiny (either answer within 1e-5 of the
// threshold, where float32 rounding decides), else within decayTol of want.
func checkDecayed(got float32, want, fac float64) bool {
	const edge = 1e-5
	near := func(x float64) bool { return math.Abs(math.Abs(x)/DecayTiny-1) < edge }
	if near(fac) || near(want) {
		return got == 0 || math.Abs(float64(got)-want) <= decayTol*math.Abs(want)
	}
	if fac < DecayTiny || math.Abs(want) < DecayTiny {
		return got == 0
	}
	return math.Abs(float64(got)-want) <= decayTol*math.Abs(want)
}

// decayGam returns n cumulative log-decays, each step uniform in (−step, 0].
func decayGam(r *rand.Rand, n int, step float64) []float32 {
	g := make([]float32, n)
	var run float32
	for i := range g {
		run -= float32(r.Float64() * step)
		g[i] = run
	}
	return g
}

// TestCausalDecayMatchesFloat64: every variant, row lengths around the 16-lane blocks and past the
// SIMD stack (maxDecayN), mild decays and ones that reach e^{−100s} (where the factors are zeroed),
// strict and not, with and without row scales. Budget: checkDecayed.
func TestCausalDecayMatchesFloat64(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	for name, k := range variants(p) {
		r := rand.New(rand.NewPCG(1, 2))
		for _, n := range []int{1, 5, 16, 17, 40, 64, maxDecayN + 3} {
			for _, step := range []float64{0.1, 3, 8} {
				for _, strict := range []bool{false, true} {
					gam := decayGam(r, n, step)
					c0 := randVec(r, n*n)
					var s []float32
					if strict {
						s = randVec(r, n)
					}
					c := append([]float32(nil), c0...)
					k.CausalDecay(c, n, gam, s, strict)
					for i := range n {
						for j := range n {
							got := c[i*n+j]
							if j > i || (strict && j == i) {
								if got != 0 {
									t.Fatalf("%s n %d (%d, %d): %g above the limit", name, n, i, j, got)
								}
								continue
							}
							si := 1.0
							if s != nil {
								si = float64(s[i])
							}
							fac := math.Exp(float64(gam[i] - gam[j])) // the float32 difference, as the kernels take it
							if !checkDecayed(got, si*float64(c0[i*n+j])*fac, fac) {
								t.Fatalf("%s n %d step %g strict %v (%d, %d): %g, want %g", name, n, step, strict, i, j, got, si*float64(c0[i*n+j])*fac)
							}
						}
					}
				}
			}
		}
	}
}

// TestScaleRowsAndExpTinyMatchFloat64: ScaleRows on row lengths around the 16-lane blocks, at a
// source stride wider than the row, with factors down to DecayTiny's range and more rows than the
// SIMD stack holds; ExpTiny on exponents from 0 to −120. Budget: checkDecayed.
func TestScaleRowsAndExpTinyMatchFloat64(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	for name, k := range variants(p) {
		r := rand.New(rand.NewPCG(3, 4))
		for _, d := range []int{1, 15, 16, 33, 128} {
			for _, m := range []int{1, 7, maxDecayN + 2} {
				ss := d + 3
				src := randVec(r, m*ss)
				f := make([]float32, m)
				for i := range f {
					f[i] = float32(math.Exp(-r.Float64() * 75))
				}
				dst := make([]float32, m*d)
				k.ScaleRows(dst, d, src, ss, f)
				for i := range m {
					for x := range d {
						want := float64(f[i]) * float64(src[i*ss+x])
						if !checkDecayed(dst[i*d+x], want, 1) {
							t.Fatalf("%s ScaleRows d %d m %d (%d, %d): %g, want %g", name, d, m, i, x, dst[i*d+x], want)
						}
					}
				}
			}
		}
		for _, n := range []int{1, 16, 21, 64} {
			x := make([]float32, n)
			for j := range x {
				x[j] = -float32(r.Float64() * 120)
			}
			e := append([]float32(nil), x...)
			k.ExpTiny(e)
			for j := range x {
				want := math.Exp(float64(x[j]))
				if !checkDecayed(e[j], want, want) {
					t.Fatalf("%s ExpTiny(%g): %g, want %g", name, x[j], e[j], want)
				}
			}
		}
	}
}

// TestAccumTileTMatchesFloat64: AccumTileT on every variant against float64 sums, rows around the
// 8-row octets, key counts past the SIMD pass (maxTileKeys), a weight stride wider than the rows.
// Budget: opsTol of the summed magnitudes, as for AccumTile.
func TestAccumTileTMatchesFloat64(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	for name, k := range variants(p) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, m := range []int{1, 8, 13, 128} {
			for _, d := range []int{3, 32, 128} {
				for _, n := range []int{1, 9, maxTileKeys + 5} {
					ps, vs := m+2, d+1
					pt, v, o0 := randVec(r, n*ps), randVec(r, n*vs), randVec(r, m*d)
					o := append([]float32(nil), o0...)
					k.AccumTileT(o, m, d, pt, ps, n, v, vs)
					for i := range m {
						for x := range d {
							want, mass := float64(o0[i*d+x]), math.Abs(float64(o0[i*d+x]))
							for j := range n {
								e := float64(pt[j*ps+i]) * float64(v[j*vs+x])
								want, mass = want+e, mass+math.Abs(e)
							}
							if !near(float64(o[i*d+x]), want, mass) {
								t.Fatalf("%s AccumTileT m %d d %d n %d (%d, %d): %g, want %g", name, m, d, n, i, x, o[i*d+x], want)
							}
						}
					}
				}
			}
		}
	}
}

// TestSetTileTIsAccumOntoZeros: SetTileT, cached and streamed, on every variant, writes the same
// bits as AccumTileT onto a zeroed output, never reading the output's old contents (NaN before the
// call), with the output 64-byte aligned (where the streamed stores apply) and not; shapes as
// TestAccumTileTMatchesFloat64, and no keys (zeros).
func TestSetTileTIsAccumOntoZeros(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	nan := float32(math.NaN())
	for name, k := range variants(p) {
		r := rand.New(rand.NewPCG(9, 10))
		for _, m := range []int{1, 8, 13, 128} {
			for _, d := range []int{3, 32, 128} {
				for _, n := range []int{0, 1, 9, maxTileKeys + 5} {
					ps, vs := m+2, d+1
					pt, v := randVec(r, max(n, 1)*ps), randVec(r, max(n, 1)*vs)
					want := make([]float32, m*d)
					k.AccumTileT(want, m, d, pt, ps, n, v, vs)
					for _, stream := range []bool{false, true} {
						for _, skew := range []int{0, 1} {
							buf := make([]float32, m*d+32)
							at := skew
							for uintptr(unsafe.Pointer(&buf[at]))%64 != uintptr(4*skew) {
								at++
							}
							o := buf[at : at+m*d]
							for i := range o {
								o[i] = nan
							}
							k.SetTileT(o, m, d, pt, ps, n, v, vs, stream)
							for i := range o {
								if math.Float32bits(o[i]) != math.Float32bits(want[i]) {
									t.Fatalf("%s SetTileT m %d d %d n %d stream %v skew %d: [%d] %g, want %g", name, m, d, n, stream, skew, i, o[i], want[i])
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestUnitLowerInverseMatchesFloat64: every variant, sizes around the 16-column blocks and past the
// SIMD stack, against the same recurrence in float64, with entries of the delta rule's −A: decayed
// unit-key dot products times β, some under DecayTiny. Budget: opsTol of the propagated
// magnitudes (mass_i = e_i + Σ_j |l_ij|·mass_j, the scale each row's rounding is relative to), and
// the result's upper triangle exactly zero and its diagonal exactly one.
func TestUnitLowerInverseMatchesFloat64(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	for name, k := range variants(p) {
		r := rand.New(rand.NewPCG(7, 8))
		for _, n := range []int{1, 2, 15, 16, 17, 64, maxDecayN + 1} {
			for _, step := range []float64{0.05, 8} {
				gam := decayGam(r, n, step)
				l := make([]float32, n*n)
				for i := range n {
					for j := range i {
						l[i*n+j] = -float32(r.Float64()) * float32(r.Float64()*2-1) * float32(math.Exp(float64(gam[i]-gam[j])))
					}
					l[i*n+i] = 7 // not read
				}
				got := make([]float32, n*n)
				for i := range got {
					got[i] = float32(math.NaN()) // every element must be written
				}
				k.UnitLowerInverse(got, l, n)
				want, mass := make([]float64, n*n), make([]float64, n*n)
				for i := range n {
					want[i*n+i], mass[i*n+i] = 1, 1
					for x := range i {
						for j := x; j < i; j++ {
							want[i*n+x] += float64(l[i*n+j]) * want[j*n+x]
							mass[i*n+x] += math.Abs(float64(l[i*n+j])) * mass[j*n+x]
						}
					}
				}
				for i := range n {
					for x := range n {
						g, w := float64(got[i*n+x]), want[i*n+x]
						switch {
						case x > i && g != 0, x == i && g != 1:
							t.Fatalf("%s n %d (%d, %d): %g", name, n, i, x, g)
						case math.Abs(w) < DecayTiny*(1-1e-3) && mass[i*n+x] < DecayTiny && g != 0:
							t.Fatalf("%s n %d (%d, %d): %g, want 0 (under DecayTiny)", name, n, i, x, g)
						case !(math.Abs(g-w) <= opsTol*mass[i*n+x]+DecayTiny):
							t.Fatalf("%s n %d step %g (%d, %d): %g, want %g", name, n, step, i, x, g, w)
						}
					}
				}
			}
		}
	}
}

// TestAccumTileLowerMatchesFloat64: AccumTileLower on every variant against float64 sums over
// j ≤ i, rows around the 8-row octets and past maxTileKeys, the weights' upper triangle zero (as
// the contract asks) but for the rows' far right, set to garbage no tile reads. Budget: opsTol of
// the summed magnitudes.
func TestAccumTileLowerMatchesFloat64(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	for name, k := range variants(p) {
		r := rand.New(rand.NewPCG(9, 10))
		for _, m := range []int{1, 8, 13, 64, maxTileKeys + 9} {
			for _, d := range []int{3, 32, 128} {
				vs := d + 1
				pw, v, o0 := randVec(r, m*m), randVec(r, (m-1)*vs+d), randVec(r, m*d)
				for i := range m {
					for j := i + 1; j < m; j++ {
						pw[i*m+j] = 0
						if j >= (i|7)+1 { // past the row's 8-row group
							pw[i*m+j] = float32(math.NaN())
						}
					}
				}
				o := append([]float32(nil), o0...)
				k.AccumTileLower(o, m, d, pw, v, vs)
				for i := range m {
					for x := range d {
						want, mass := float64(o0[i*d+x]), math.Abs(float64(o0[i*d+x]))
						for j := 0; j <= i; j++ {
							e := float64(pw[i*m+j]) * float64(v[j*vs+x])
							want, mass = want+e, mass+math.Abs(e)
						}
						if !near(float64(o[i*d+x]), want, mass) {
							t.Fatalf("%s AccumTileLower m %d d %d (%d, %d): %g, want %g", name, m, d, i, x, o[i*d+x], want)
						}
					}
				}
			}
		}
	}
}

// TestScoreTileLowerMatchesFloat64: ScoreTileLower on every variant against float64 dot products
// on and below the diagonal, rows around the 4-row quads, head sizes the SIMD tile takes and one
// it hands to Dots, keys at a stride wider than the head. Budget: opsTol of the summed magnitudes.
func TestScoreTileLowerMatchesFloat64(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	for name, k := range variants(p) {
		r := rand.New(rand.NewPCG(13, 14))
		for _, m := range []int{1, 3, 4, 9, 64} {
			for _, d := range []int{3, 16, 128} {
				ks := d + 5
				q, keys := randVec(r, m*d), randVec(r, (m-1)*ks+d)
				s := make([]float32, m*m)
				k.ScoreTileLower(s, q, m, d, keys, ks)
				for i := range m {
					for j := 0; j <= i; j++ {
						var want, mass float64
						for x := range d {
							e := float64(q[i*d+x]) * float64(keys[j*ks+x])
							want, mass = want+e, mass+math.Abs(e)
						}
						if !near(float64(s[i*m+j]), want, mass) {
							t.Fatalf("%s ScoreTileLower m %d d %d (%d, %d): %g, want %g", name, m, d, i, j, s[i*m+j], want)
						}
					}
				}
			}
		}
	}
}
