package conformance

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lily-engine/lily/metal/device"
	"github.com/lily-engine/lily/metal/emu"
)

// brokenCopy returns kernel name's source from the library, renamed name_suffix, with old replaced
// by new once: a deliberately broken kernel for showing that an emulator check catches the bug.
func brokenCopy(t *testing.T, name, suffix, old, new string) string {
	t.Helper()
	src := device.Source()
	i := strings.Index(src, "kernel void "+name+"(")
	if i < 0 {
		t.Fatalf("kernel %s not in the library", name)
	}
	j := strings.Index(src[i:], "\n}\n")
	k := src[i : i+j+3]
	if !strings.Contains(k, old) {
		t.Fatalf("kernel %s no longer contains %q: update the broken copy", name, old)
	}
	k = strings.Replace(k, old, new, 1)
	return strings.Replace(k, "kernel void "+name+"(", "kernel void "+name+"_"+suffix+"(", 1)
}

// TestEmuCatchesBrokenKernels shows each check of the emulator failing a broken copy of a real
// kernel that the real kernel passes: an unguarded tail (bounds), a read of threadgroup memory no
// thread wrote (poison), and a missing barrier that the in-order schedule happens to tolerate
// (schedules).
func TestEmuCatchesBrokenKernels(t *testing.T) {
	if testing.Short() {
		t.Skip("the Metal emulator compiles the kernels with g++; skipped in -short")
	}
	broken := strings.Join([]string{
		brokenCopy(t, "swiglu", "unguarded", "if (i < d.n) g[i]", "g[i]"),
		brokenCopy(t, "rms_norm", "unwritten", "float v = lane < nsg ? part[lane] : 0.0f;", "float v = part[lane];"),
		brokenCopy(t, "rms_norm", "late_barrier",
			"if (lane == 0) part[0] = v;\n  }\n  threadgroup_barrier(mem_flags::mem_threadgroup);\n",
			"if (lane == 0) part[0] = v;\n  }\n"),
	}, "\n")
	e, err := emu.Build(map[string]string{"lily.metal": device.Source(), "zz_broken.metal": broken})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rng := rand.New(rand.NewPCG(21, 1))

	t.Run("bounds", func(t *testing.T) {
		const n = 300 // two threadgroups of 256: 212 threads past the end
		g, u := randVec(rng, n, 1), randVec(rng, n, 1)
		if err := e.Dispatch("swiglu", [3]int{2, 1, 1}, [3]int{256, 1, 1}, map[int][]byte{0: f32(g), 1: f32(u), 2: dims(n)}); err != nil {
			t.Fatalf("the real kernel: %v", err)
		}
		err := e.Dispatch("swiglu_unguarded", [3]int{2, 1, 1}, [3]int{256, 1, 1}, map[int][]byte{0: f32(g), 1: f32(u), 2: dims(n)})
		if err == nil {
			t.Fatal("an access past the buffer's end passed")
		}
		for _, want := range []string{"swiglu_unguarded", "buffer 0 (g)", "element 300"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %q", err, want)
			}
		}
		// The failed dispatch leaves the emulator usable.
		if err := e.Dispatch("swiglu", [3]int{2, 1, 1}, [3]int{256, 1, 1}, map[int][]byte{0: f32(g), 1: f32(u), 2: dims(n)}); err != nil {
			t.Fatalf("after a failed dispatch: %v", err)
		}
	})

	norm := func(t *testing.T, kernel string, s emu.Schedule) []float32 {
		t.Helper()
		const T, n = 3, 1000
		x, w := randVec(rand.New(rand.NewPCG(5, 5)), T*n, 1), randVec(rand.New(rand.NewPCG(6, 6)), n, 1)
		y := zeros(T * n)
		args := []emu.Arg{{Slot: 0, Bytes: f32(x)}, {Slot: 1, Bytes: f32(w)}, {Slot: 2, Bytes: y}, {Slot: 3, Bytes: dims(n, float32(1e-6))}}
		if err := e.Run(kernel, [3]int{T, 1, 1}, [3]int{256, 1, 1}, args, s); err != nil {
			t.Fatal(err)
		}
		return unf32(y)
	}

	t.Run("poison", func(t *testing.T) {
		if got := norm(t, "rms_norm", emu.Schedule{}); slices.ContainsFunc(got, isNaN) {
			t.Fatal("the real kernel gives NaN")
		}
		// The broken copy sums part[lane] for all 32 lanes, 24 of them never written: zeroed
		// threadgroup memory would hide it; poisoned memory makes every output NaN.
		if got := norm(t, "rms_norm_unwritten", emu.Schedule{}); !slices.ContainsFunc(got, isNaN) {
			t.Fatal("a read of unwritten threadgroup memory went unnoticed")
		}
	})

	t.Run("schedules", func(t *testing.T) {
		want := norm(t, "rms_norm", emu.Schedule{})
		for _, s := range emu.Schedules {
			if got := norm(t, "rms_norm", s); !slices.Equal(got, want) {
				t.Fatalf("the real kernel differs under schedule %v", s)
			}
		}
		// Without the second barrier, SIMD groups 1-7 read part[0] before or after SIMD group 0
		// stores the total in it, depending on the order they run in.
		if got := norm(t, "rms_norm_late_barrier", emu.Schedule{}); !slices.Equal(got, want) {
			t.Fatal("the broken copy already fails in order: the test no longer shows a schedule-only race")
		}
		differs := false
		for _, s := range emu.Schedules[1:] {
			differs = differs || !slices.Equal(norm(t, "rms_norm_late_barrier", s), want)
		}
		if !differs {
			t.Fatal("a missing barrier gave identical results under every schedule")
		}
		x := map[int][]byte{0: f32(randVec(rng, 1000, 1)), 1: f32(randVec(rng, 1000, 1)), 2: zeros(1000), 3: dims(1000, float32(1e-6))}
		if err := sameUnderSchedules(e, "rms_norm_late_barrier", [3]int{1, 1, 1}, [3]int{256, 1, 1}, x, nil); err == nil {
			t.Fatal("kern.run's schedule comparison passed the broken kernel")
		}
	})
}

func isNaN(v float32) bool { return math.IsNaN(float64(v)) }
