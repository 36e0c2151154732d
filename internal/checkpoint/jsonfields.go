package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// object is one decoded JSON object whose fields are read with type checks.
type object map[string]json.RawMessage

// parseObject decodes raw as a JSON object.
func parseObject(raw []byte) (object, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, err
	}
	return o, nil
}

// has reports whether key is present and not null.
func (o object) has(key string) bool {
	v, ok := o[key]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// intField reads an integer field; absent or null gives def.
func (o object) intField(key string, def int) (int, error) {
	if !o.has(key) {
		return def, nil
	}
	return parseInt(key, o[key])
}

func parseInt(key string, raw json.RawMessage) (int, error) {
	var n json.Number
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] == '"' || json.Unmarshal(t, &n) != nil {
		return 0, fmt.Errorf("%s: want an integer, got %s", key, raw)
	}
	i, err := n.Int64()
	var ne *strconv.NumError
	if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) || err == nil && (i < math.MinInt32 || i > math.MaxInt32) {
		return 0, fmt.Errorf("%s: %s is out of range (want %d to %d)", key, bytes.TrimSpace(raw), math.MinInt32, math.MaxInt32)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: want an integer, got %s", key, raw)
	}
	return int(i), nil
}

// floatField reads a number field; absent or null gives def.
func (o object) floatField(key string, def float64) (float64, error) {
	if !o.has(key) {
		return def, nil
	}
	var f float64
	if err := json.Unmarshal(o[key], &f); err != nil {
		return 0, fmt.Errorf("%s: want a number, got %s", key, o[key])
	}
	return f, nil
}

// boolField reads a boolean field; absent or null gives def.
func (o object) boolField(key string, def bool) (bool, error) {
	if !o.has(key) {
		return def, nil
	}
	var b bool
	if err := json.Unmarshal(o[key], &b); err != nil {
		return false, fmt.Errorf("%s: want true or false, got %s", key, o[key])
	}
	return b, nil
}

// stringField reads a string field; absent or null gives def.
func (o object) stringField(key, def string) (string, error) {
	if !o.has(key) {
		return def, nil
	}
	var s string
	if err := json.Unmarshal(o[key], &s); err != nil {
		return "", fmt.Errorf("%s: want a string, got %s", key, o[key])
	}
	return s, nil
}

// objectField reads a nested object; absent or null gives nil.
func (o object) objectField(key string) (object, error) {
	if !o.has(key) {
		return nil, nil
	}
	sub, err := parseObject(o[key])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return sub, nil
}

// intList reads an integer or a list of integers (eos_token_id); absent or null gives nil.
func (o object) intList(key string) ([]int, error) {
	if !o.has(key) {
		return nil, nil
	}
	raw := bytes.TrimSpace(o[key])
	if raw[0] != '[' {
		i, err := parseInt(key, raw)
		if err != nil {
			return nil, err
		}
		return []int{i}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%s: want an integer list, got %s", key, raw)
	}
	out := make([]int, len(items))
	for i, it := range items {
		v, err := parseInt(key, it)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
