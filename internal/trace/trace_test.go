package trace

import "testing"

func TestNamesRoundTrip(t *testing.T) {
	want := map[Point]string{
		Model(Embed): "embed", At(0, InputNorm): "L0.input_norm", At(17, DeltaNetOut): "L17.deltanet.out",
		At(3, AttentionOut): "L3.attention.out", At(39, MoEResid): "L39.moe.resid", At(2, Router): "L2.router",
		Model(FinalNorm): "final_norm", Model(Logits): "logits",
	}
	for p, name := range want {
		if p.String() != name {
			t.Errorf("%#v: %q, want %q", p, p.String(), name)
		}
		q, err := Parse(name)
		if err != nil || q != p {
			t.Errorf("Parse(%q) = %#v, %v; want %#v", name, q, err, p)
		}
	}
	for _, bad := range []string{"", "L.input_norm", "L-1.input_norm", "L01.input_norm", "L3.embed", "L3.logits", "L3", "x.y", "input_norm"} {
		if p, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", bad, p)
		}
	}
}

// TestOrderIsTheForwardPass: the embedding, then layer by layer each site in order, then the head.
func TestOrderIsTheForwardPass(t *testing.T) {
	seq := []Point{Model(Embed), At(0, InputNorm), At(0, DeltaNetOut), At(0, MoEResid), At(1, InputNorm),
		At(1, AttentionOut), At(1, MixerResid), At(1, PostNorm), At(1, Router), At(1, MoEOut), At(40, MoEResid),
		Model(FinalNorm), Model(Logits)}
	for i := 1; i < len(seq); i++ {
		if seq[i-1].Order() >= seq[i].Order() {
			t.Errorf("%v (%d) is not before %v (%d)", seq[i-1], seq[i-1].Order(), seq[i], seq[i].Order())
		}
	}
}

// TestRecorderRejectsMalformedReports: rows that do not divide the values are an error, not a panic.
func TestRecorderRejectsMalformedReports(t *testing.T) {
	r := NewRecorder()
	r.Rows(Model(Embed), 0, 2, make([]float32, 3))
	if r.Err() == nil {
		t.Error("3 values in 2 rows accepted")
	}
	r = NewRecorder()
	r.Route(0, 0, 1, make([]float32, 8), []int{1, 2}, []float32{1})
	if r.Err() == nil {
		t.Error("2 ids with 1 weight accepted")
	}
	r = NewRecorder()
	r.Route(0, 4, 2, make([]float32, 8), []int{3, 1, 0, 2}, []float32{.1, .2, .3, .4})
	c, ok := r.Choice(0, 4)
	if !ok || c.IDs[0] != 1 || c.IDs[1] != 3 || c.Weights[0] != .2 || c.Weights[1] != .1 {
		t.Errorf("choice at 4: %+v, want experts [1 3] weights [.2 .1]", c)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"embed", "L3.deltanet.out", "L12.router", "logits", "L.x", "L99999999999999999999.moe.out"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			return
		}
		if p.String() != s {
			t.Fatalf("Parse(%q) = %v, which prints as %q", s, p, p.String())
		}
	})
}
