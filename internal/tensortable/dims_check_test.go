package tensortable

import (
	"strings"
	"testing"
)

// TestCheckGroups: the real model's sizes pass; each broken grouping is named.
func TestCheckGroups(t *testing.T) {
	ok := Dims{Hq: 16, Hkv: 2, Hk: 16, Hv: 32, E: 256, TopK: 8}
	if err := ok.CheckGroups(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*Dims)
		want string
	}{
		{func(d *Dims) { d.Hkv = 3 }, "num_attention_heads 16 is not a multiple of num_key_value_heads 3"},
		{func(d *Dims) { d.Hkv = 0 }, "num_key_value_heads 0"},
		{func(d *Dims) { d.Hk = 5 }, "linear_num_value_heads 32 is not a multiple of linear_num_key_heads 5"},
		{func(d *Dims) { d.TopK = 300 }, "num_experts_per_tok 300 exceeds num_experts 256"},
	} {
		d := ok
		c.edit(&d)
		if err := d.CheckGroups(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
}
