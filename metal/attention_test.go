package metal

import "testing"

// TestDecodeSplit checks the decode split-K choice: every range count fits the partials buffer
// (decodeMaxSplits), ranges are whole 16-key blocks, and from 4K keys on the real model's 2 kv
// heads the threadgroup count stays near decodeTargetGroups while the split grows with the length.
func TestDecodeSplit(t *testing.T) {
	for _, hkv := range []int{1, 2, 4} {
		const maxCtx = 40000
		bound := decodeMaxSplits(maxCtx, hkv)
		for n := 1; n <= maxCtx; n++ {
			split := decodeSplit(n, hkv)
			if split%decodeBlock != 0 || split < decodeMinSplit {
				t.Fatalf("hkv %d, n %d: split %d is not a multiple of %d of at least %d", hkv, n, split, decodeBlock, decodeMinSplit)
			}
			if s := cdiv(n, split); s > bound {
				t.Fatalf("hkv %d, n %d: %d splits exceed the %d the partials buffer holds", hkv, n, s, bound)
			}
		}
	}
	for _, n := range []int{4096, 8192, 32768, 131072, 262144} {
		split := decodeSplit(n, 2)
		groups := 2 * cdiv(n, split)
		if groups < decodeTargetGroups/2 || groups > decodeTargetGroups+2 {
			t.Errorf("n %d: %d threadgroups (split %d), want about %d", n, groups, split, decodeTargetGroups)
		}
	}
	// Below 4K keys the split stays at its minimum: 1,024 keys on 2 kv heads are 64 threadgroups of
	// 8 SIMD groups.
	if got := 2 * cdiv(1024, decodeSplit(1024, 2)); got != 64 {
		t.Errorf("n 1024: %d threadgroups, want 64", got)
	}
}
