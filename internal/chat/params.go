package chat

import (
	"bytes"
	"encoding/json"
	"strings"
)

// toolSchemas maps a function name to its parameters' schemas (property name → schema object).
type toolSchemas map[string]map[string]*value

// parseToolSchemas reads the request's tools: OpenAI {"type":"function","function":{…}} entries or
// bare function objects. Entries that are not objects or have no string name are skipped (they
// cannot be called; Render still prints them as the template does).
func parseToolSchemas(raw json.RawMessage) (toolSchemas, error) {
	tools, err := decodeTools(raw)
	if err != nil {
		return nil, err
	}
	out := toolSchemas{}
	for _, t := range tools {
		fn := t
		if f := t.get("function"); f != nil && f.kind == kObject {
			fn = f
		}
		name := fn.get("name") // nil unless fn is an object
		if !name.isString() {
			continue
		}
		props := map[string]*value{}
		if p := fn.get("parameters").get("properties"); p != nil {
			for k, key := range p.keys {
				props[key] = p.vals[k]
			}
		}
		out[name.str] = props
	}
	return out, nil
}

// schemaTypes returns the JSON-schema "type" of a property: a string or a list of strings.
func schemaTypes(schema *value) []string {
	t := schema.get("type")
	switch {
	case t == nil:
		return nil
	case t.kind == kString:
		return []string{t.str}
	case t.kind == kArray:
		var out []string
		for _, x := range t.arr {
			if x.kind == kString {
				out = append(out, x.str)
			}
		}
		return out
	}
	return nil
}

// typedValue turns a generated parameter value into JSON text following the property's schema:
// "string" keeps the text; integer, number, boolean, null, object and array parse it (a value that
// does not parse as the declared type falls back to a string, so nothing is lost); a list of types
// takes the first that fits; an unknown property or type takes the text as JSON if it is JSON, else
// as a string.
func typedValue(schema *value, text string) string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	types := schemaTypes(schema)
	if len(types) == 0 {
		return jsonOrString(text)
	}
	for _, t := range types {
		if t == "string" {
			continue // tried last: every text is a string
		}
		if js, ok := asType(t, strings.TrimSpace(text)); ok {
			return js
		}
	}
	for _, t := range types {
		if t == "string" {
			return quoteJSON(text)
		}
		if !knownType(t) {
			return jsonOrString(text)
		}
	}
	return quoteJSON(text)
}

func knownType(t string) bool {
	switch t {
	case "string", "integer", "number", "boolean", "null", "object", "array":
		return true
	}
	return false
}

// asType returns s as JSON of JSON-schema type t, if s is one.
func asType(t, s string) (string, bool) {
	switch t {
	case "integer", "number":
		if s == "" || !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) || !json.Valid([]byte(s)) {
			return "", false
		}
		if t == "integer" && strings.ContainsAny(s, ".eE") {
			return "", false
		}
		return s, true
	case "boolean":
		switch strings.ToLower(s) {
		case "true":
			return "true", true
		case "false":
			return "false", true
		}
	case "null":
		if s == "null" || s == "None" {
			return "null", true
		}
	case "object", "array":
		open := byte('{')
		if t == "array" {
			open = '['
		}
		if s != "" && s[0] == open {
			if js, ok := compactJSON(s); ok {
				return js, true
			}
		}
	}
	return "", false
}

// jsonOrString is text as JSON if it is a JSON document, else as a JSON string.
func jsonOrString(text string) string {
	if js, ok := compactJSON(strings.TrimSpace(text)); ok {
		return js
	}
	return quoteJSON(text)
}

func compactJSON(s string) (string, bool) {
	if !json.Valid([]byte(s)) {
		return "", false
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return "", false
	}
	return b.String(), true
}

// quoteJSON is s as a JSON string (json.dumps style, non-ASCII kept).
func quoteJSON(s string) string {
	var sb strings.Builder
	writeJSONString(&sb, strings.ToValidUTF8(s, "\uFFFD"))
	return sb.String()
}
