package hfconfig

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
)

// Field is one member of an Object.
type Field struct {
	Key   string
	Value any
}

// Object is a JSON object that keeps its members in order, as the real config files do.
type Object []Field

// MarshalJSON writes the members in order.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Number spells integral floats without an exponent (10000000, not 1e+07), as Python's json does
// for the real config's integers.
func Number(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return f
}

// File is a config.json as lily's writers (internal/synth, checkpointtest) produce it: the nested
// Qwen3_5MoeForConditionalGeneration layout with every Config field under the key checkpoint.ParseConfig
// reads it from, plus members the reader ignores, appended to each object.
type File struct {
	Config *Config
	// Top, Text and Rope are extra members of the top level, text_config and rope_parameters.
	Top, Text, Rope Object
}

// MarshalJSON writes the file; checkpoint.ParseConfig reads the Config back.
func (f File) MarshalJSON() ([]byte, error) {
	c := f.Config
	types := make([]string, len(c.LayerTypes))
	for i, k := range c.LayerTypes {
		types[i] = k.String()
	}
	text := Object{{KeyModelType, TextModelType}}
	for _, k := range c.IntKeys() {
		text = append(text, Field{k.Key, *k.Field})
	}
	rope := append(Object{{KeyRopeType, RopeDefault}, {KeyRopeTheta, Number(c.RopeTheta)},
		{KeyPartialRotary, c.PartialRotaryFactor}}, f.Rope...)
	text = append(text,
		Field{KeyLayerTypes, types},
		Field{KeyAttentionBias, false},
		Field{KeyHiddenAct, HiddenAct},
		Field{KeyRMSNormEps, c.RMSNormEps},
		Field{KeyRopeParameters, rope},
		Field{KeyPartialRotary, c.PartialRotaryFactor},
		Field{KeyTieWordEmbeddings, c.TieWordEmbeddings})
	if c.BOSTokenID >= 0 {
		text = append(text, Field{KeyBOSTokenID, c.BOSTokenID})
	}
	switch len(c.EOSTokenIDs) {
	case 0:
	case 1:
		text = append(text, Field{KeyEOSTokenID, c.EOSTokenIDs[0]})
	default:
		text = append(text, Field{KeyEOSTokenID, c.EOSTokenIDs})
	}
	top := Object{{"architectures", []string{Architecture}}, {KeyModelType, ModelType},
		{KeyTieWordEmbeddings, c.TieWordEmbeddings}, {KeyTextConfig, append(text, f.Text...)}}
	top = append(top, f.Top...)
	if q := c.Quant; q != nil {
		block := Object{{KeyGroupSize, q.GroupSize}, {KeyBits, q.Bits}, {KeyMode, q.Mode}}
		mods := make([]string, 0, len(q.Overrides))
		for m := range q.Overrides {
			mods = append(mods, m)
		}
		sort.Strings(mods)
		for _, m := range mods {
			o := q.Overrides[m]
			block = append(block, Field{m, Object{{KeyGroupSize, o.GroupSize}, {KeyBits, o.Bits}}})
		}
		top = append(top, Field{KeyQuantization, block}, Field{KeyQuantizationConfig, block})
	}
	return json.Marshal(top)
}

// MarshalFile is the file's indented JSON with a trailing newline.
func (f File) MarshalFile() ([]byte, error) {
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
