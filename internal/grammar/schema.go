package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// SchemaError says what part of a JSON schema is outside the supported subset.
type SchemaError struct {
	Path    string // JSON pointer-like path of the offending keyword, "" for the root
	Message string
}

func (e *SchemaError) Error() string {
	if e.Path == "" {
		return "schema: " + e.Message
	}
	return "schema at " + e.Path + ": " + e.Message
}

// annotations are keywords that do not constrain documents.
var annotations = map[string]bool{
	"title": true, "description": true, "$schema": true, "$id": true, "$comment": true, "default": true,
	"examples": true, "deprecated": true, "readOnly": true, "writeOnly": true, "strict": true,
}

// FromSchema compiles a JSON schema into a grammar of the compact JSON documents it accepts. The
// supported subset: type (one or a list), properties with required (members come in the order of
// properties; additionalProperties may be false or absent; no other members are generated), enum,
// const, items with minItems/maxItems, minLength/maxLength, anyOf, nullable, and an empty schema
// (any value). Any other keyword is an error, so that no constraint is silently dropped.
func FromSchema(schema []byte) (*Grammar, error) {
	n, err := SchemaNode(schema)
	if err != nil {
		return nil, err
	}
	return Compile(n)
}

// SchemaNode is FromSchema's node, for use inside a larger grammar (a tool call's arguments).
func SchemaNode(schema []byte) (*Node, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, &SchemaError{Message: "not JSON: " + err.Error()}
	}
	return schemaNode(v, "", 0)
}

// maxSchemaDepth bounds schema nesting.
const maxSchemaDepth = 32

func schemaNode(v any, path string, depth int) (*Node, error) {
	if depth > maxSchemaDepth {
		return nil, &SchemaError{Path: path, Message: fmt.Sprintf("nested deeper than %d", maxSchemaDepth)}
	}
	if b, ok := v.(bool); ok {
		if !b {
			return nil, &SchemaError{Path: path, Message: "the false schema accepts nothing"}
		}
		return AnyValue(), nil
	}
	s, ok := v.(map[string]any)
	if !ok {
		return nil, &SchemaError{Path: path, Message: "a schema must be an object"}
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "type", "properties", "required", "additionalProperties", "enum", "const", "items", "minItems",
			"maxItems", "minLength", "maxLength", "anyOf", "nullable":
		default:
			if !annotations[k] {
				return nil, &SchemaError{Path: path + "/" + k, Message: fmt.Sprintf("keyword %q is not supported", k)}
			}
		}
	}
	var n *Node
	var err error
	switch {
	case s["const"] != nil:
		n, err = literal(s["const"], path+"/const")
	case s["enum"] != nil:
		n, err = enum(s["enum"], path+"/enum")
	case s["anyOf"] != nil:
		n, err = anyOf(s["anyOf"], path+"/anyOf", depth)
	default:
		n, err = typed(s, path, depth)
	}
	if err != nil {
		return nil, err
	}
	if nb, _ := s["nullable"].(bool); nb {
		n = Alt(n, Lit("null"))
	}
	return n, nil
}

func literal(v any, path string) (*Node, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &SchemaError{Path: path, Message: err.Error()}
	}
	return Lit(string(b)), nil
}

func enum(v any, path string) (*Node, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, &SchemaError{Path: path, Message: "must be a non-empty array"}
	}
	alt := Alt()
	for _, x := range list {
		l, err := literal(x, path)
		if err != nil {
			return nil, err
		}
		alt.kids = append(alt.kids, l)
	}
	return alt, nil
}

func anyOf(v any, path string, depth int) (*Node, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, &SchemaError{Path: path, Message: "must be a non-empty array of schemas"}
	}
	alt := Alt()
	for i, x := range list {
		k, err := schemaNode(x, fmt.Sprintf("%s/%d", path, i), depth+1)
		if err != nil {
			return nil, err
		}
		alt.kids = append(alt.kids, k)
	}
	return alt, nil
}

func typed(s map[string]any, path string, depth int) (*Node, error) {
	var types []string
	switch t := s["type"].(type) {
	case nil:
		if s["properties"] != nil {
			types = []string{"object"}
		} else if s["items"] != nil {
			types = []string{"array"}
		} else {
			return AnyValue(), nil
		}
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			name, ok := x.(string)
			if !ok {
				return nil, &SchemaError{Path: path + "/type", Message: "must be a string or an array of strings"}
			}
			types = append(types, name)
		}
	default:
		return nil, &SchemaError{Path: path + "/type", Message: "must be a string or an array of strings"}
	}
	alt := Alt()
	for _, t := range types {
		n, err := typeNode(t, s, path, depth)
		if err != nil {
			return nil, err
		}
		alt.kids = append(alt.kids, n)
	}
	if len(alt.kids) == 1 {
		return alt.kids[0], nil
	}
	if len(alt.kids) == 0 {
		return nil, &SchemaError{Path: path + "/type", Message: "names no type"}
	}
	return alt, nil
}

func intKeyword(s map[string]any, key, path string, def int) (int, error) {
	v, ok := s[key]
	if !ok {
		return def, nil
	}
	num, ok := v.(json.Number)
	if !ok {
		return 0, &SchemaError{Path: path + "/" + key, Message: "must be a non-negative integer"}
	}
	i, err := num.Int64()
	if err != nil || i < 0 || i > 1<<20 {
		return 0, &SchemaError{Path: path + "/" + key, Message: "must be a non-negative integer up to 1048576"}
	}
	return int(i), nil
}

func typeNode(t string, s map[string]any, path string, depth int) (*Node, error) {
	switch t {
	case "null":
		return Lit("null"), nil
	case "boolean":
		return Alt(Lit("true"), Lit("false")), nil
	case "integer":
		return Integer(), nil
	case "number":
		return Number(), nil
	case "string":
		lo, err := intKeyword(s, "minLength", path, 0)
		if err != nil {
			return nil, err
		}
		hi, err := intKeyword(s, "maxLength", path, -1)
		if err != nil {
			return nil, err
		}
		if hi >= 0 && hi < lo {
			return nil, &SchemaError{Path: path, Message: "maxLength is below minLength"}
		}
		return String(lo, hi), nil
	case "array":
		item := AnyValue()
		if it, ok := s["items"]; ok {
			var err error
			if item, err = schemaNode(it, path+"/items", depth+1); err != nil {
				return nil, err
			}
		}
		lo, err := intKeyword(s, "minItems", path, 0)
		if err != nil {
			return nil, err
		}
		hi, err := intKeyword(s, "maxItems", path, -1)
		if err != nil {
			return nil, err
		}
		if hi >= 0 && hi < lo {
			return nil, &SchemaError{Path: path, Message: "maxItems is below minItems"}
		}
		return Array(item, lo, hi), nil
	case "object":
		return objectNode(s, path, depth)
	}
	return nil, &SchemaError{Path: path + "/type", Message: fmt.Sprintf("unknown type %q", t)}
}

func objectNode(s map[string]any, path string, depth int) (*Node, error) {
	if ap, ok := s["additionalProperties"]; ok {
		if b, isBool := ap.(bool); !isBool || b {
			if s["properties"] == nil {
				return AnyObject(), nil
			}
			if !isBool {
				return nil, &SchemaError{Path: path + "/additionalProperties", Message: "only false (or absent) is supported"}
			}
		}
	}
	props, _ := s["properties"].(map[string]any)
	if s["properties"] != nil && props == nil {
		return nil, &SchemaError{Path: path + "/properties", Message: "must be an object"}
	}
	if props == nil {
		return AnyObject(), nil
	}
	required := map[string]bool{}
	if r, ok := s["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return nil, &SchemaError{Path: path + "/required", Message: "must be an array of property names"}
		}
		for _, x := range list {
			name, ok := x.(string)
			if !ok || props[name] == nil {
				return nil, &SchemaError{Path: path + "/required", Message: fmt.Sprintf("%v is not a property", x)}
			}
			required[name] = true
		}
	}
	names := orderedKeys(props)
	var list []Property
	for _, name := range names {
		v, err := schemaNode(props[name], path+"/properties/"+strings.ReplaceAll(name, "/", "~1"), depth+1)
		if err != nil {
			return nil, err
		}
		list = append(list, Property{Name: name, Value: v, Required: required[name]})
	}
	return Object(list...), nil
}

// orderedKeys is the property names in sorted order (Go maps lose the schema's order; a fixed
// order keeps generation reproducible).
func orderedKeys(props map[string]any) []string {
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
