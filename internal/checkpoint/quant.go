package checkpoint

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lily-engine/lily/internal/hfconfig"
)

// parseQuantization reads "quantization" (mlx-lm) or "quantization_config" (its copy, or an HF
// quantizer's block), at the top level or inside text_config. nil means unquantized.
func parseQuantization(top, text object) (*Quantization, error) {
	var block object
	var key string
	for _, o := range []object{top, text} {
		for _, k := range []string{hfconfig.KeyQuantization, hfconfig.KeyQuantizationConfig} {
			if block == nil && o.has(k) {
				b, err := o.objectField(k)
				if err != nil {
					return nil, err
				}
				block, key = b, k
			}
		}
	}
	if block == nil {
		return nil, nil
	}
	if block.has(hfconfig.KeyQuantMethod) && !block.has(hfconfig.KeyBits) {
		m, _ := block.stringField(hfconfig.KeyQuantMethod, "")
		return nil, fmt.Errorf("%s: quant_method %q is not supported (only MLX affine)", key, m)
	}
	q := &Quantization{Overrides: map[string]QuantParams{}}
	var err error
	if q.Mode, err = block.stringField(hfconfig.KeyMode, hfconfig.ModeAffine); err != nil {
		return nil, fmt.Errorf("%s.%w", key, err)
	}
	if q.Mode != hfconfig.ModeAffine {
		return nil, fmt.Errorf("%s.mode %q is not supported (only affine)", key, q.Mode)
	}
	if q.Bits, q.GroupSize, err = bitsAndGroup(block, 0, 0); err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	paths := make([]string, 0, len(block))
	for k := range block {
		paths = append(paths, k)
	}
	sort.Strings(paths)
	for _, k := range paths {
		switch k {
		case hfconfig.KeyBits, hfconfig.KeyGroupSize, hfconfig.KeyMode, hfconfig.KeyQuantMethod:
			continue
		}
		raw := strings.TrimSpace(string(block[k]))
		switch {
		case raw == "true":
			continue // quantized with the global setting
		case raw == "false":
			q.Overrides[k] = QuantParams{} // left unquantized
			continue
		case !strings.HasPrefix(raw, "{"):
			return nil, fmt.Errorf("%s[%q]: want an object, true or false, got %s", key, k, raw)
		}
		sub, err := block.objectField(k)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		b, g, err := bitsAndGroup(sub, q.Bits, q.GroupSize)
		if err != nil {
			return nil, fmt.Errorf("%s[%q]: %w", key, k, err)
		}
		q.Overrides[k] = QuantParams{Bits: b, GroupSize: g}
	}
	return q, nil
}

// bitsAndGroup reads and checks bits (4 or 8) and group_size (32, 64 or 128).
func bitsAndGroup(o object, defBits, defGroup int) (bits, group int, err error) {
	if bits, err = o.intField(hfconfig.KeyBits, defBits); err != nil {
		return 0, 0, err
	}
	if group, err = o.intField(hfconfig.KeyGroupSize, defGroup); err != nil {
		return 0, 0, err
	}
	if bits != 4 && bits != 8 {
		return 0, 0, fmt.Errorf("bits = %d is not supported (4 or 8)", bits)
	}
	if group != 32 && group != 64 && group != 128 {
		return 0, 0, fmt.Errorf("group_size = %d is not supported (32, 64 or 128)", group)
	}
	return bits, group, nil
}
