package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// kind is the JSON type of a value.
type kind uint8

const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

// value is one decoded JSON value that keeps what Python's json.loads keeps: object key order
// (a repeated key keeps its first position and takes its last value, like a dict) and the number
// literal (printed later with Python's int/float rules).
type value struct {
	kind kind
	b    bool
	num  string   // kNumber: the literal as written
	str  string   // kString
	arr  []*value // kArray
	keys []string // kObject, in order, without repeats
	vals []*value // kObject, parallel to keys
}

// get returns the member named key of an object, or nil when v is not an object or has no such key.
func (v *value) get(key string) *value {
	if v == nil || v.kind != kObject {
		return nil
	}
	for i, k := range v.keys {
		if k == key {
			return v.vals[i]
		}
	}
	return nil
}

// has reports whether v is an object with a member named key (of any value, null included).
func (v *value) has(key string) bool { return v.get(key) != nil }

// isString reports whether v is a JSON string.
func (v *value) isString() bool { return v != nil && v.kind == kString }

// set adds or replaces a member of an object, keeping the first position of a repeated key.
func (v *value) set(key string, x *value) {
	for i, k := range v.keys {
		if k == key {
			v.vals[i] = x
			return
		}
	}
	v.keys = append(v.keys, key)
	v.vals = append(v.vals, x)
}

// decodeValue parses one JSON document. Empty input (or only white space) is an error.
func decodeValue(data []byte) (*value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeNext(dec)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty JSON document")
		}
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

func decodeNext(dec *json.Decoder) (*value, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	return decodeFrom(dec, tok)
}

func decodeFrom(dec *json.Decoder, tok json.Token) (*value, error) {
	switch t := tok.(type) {
	case nil:
		return &value{kind: kNull}, nil
	case bool:
		return &value{kind: kBool, b: t}, nil
	case json.Number:
		return &value{kind: kNumber, num: string(t)}, nil
	case string:
		return &value{kind: kString, str: t}, nil
	case json.Delim:
		switch t {
		case '[':
			v := &value{kind: kArray, arr: []*value{}}
			for dec.More() {
				x, err := decodeNext(dec)
				if err != nil {
					return nil, err
				}
				v.arr = append(v.arr, x)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			return v, nil
		case '{':
			v := &value{kind: kObject}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key %v is not a string", kt)
				}
				x, err := decodeNext(dec)
				if err != nil {
					return nil, err
				}
				v.set(key, x)
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return v, nil
		}
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}
