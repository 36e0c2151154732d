package grammar

import (
	"encoding/json"
	"fmt"
	"reflect"
	"unicode/utf8"
)

// validate checks doc against the schema subset FromSchema supports, independently of the grammar.
func validate(schema, doc any) error {
	s, ok := schema.(map[string]any)
	if !ok || len(s) == 0 {
		return nil
	}
	if c, ok := s["const"]; ok {
		if !reflect.DeepEqual(norm(c), norm(doc)) {
			return fmt.Errorf("%v is not the const %v", doc, c)
		}
		return nil
	}
	if e, ok := s["enum"].([]any); ok {
		for _, x := range e {
			if reflect.DeepEqual(norm(x), norm(doc)) {
				return nil
			}
		}
		return fmt.Errorf("%v is not in the enum", doc)
	}
	if a, ok := s["anyOf"].([]any); ok {
		for _, x := range a {
			if validate(x, doc) == nil {
				return nil
			}
		}
		return fmt.Errorf("%v matches no anyOf branch", doc)
	}
	types := []any{s["type"]}
	if l, ok := s["type"].([]any); ok {
		types = l
	}
	var errs []error
	for _, t := range types {
		err := validateType(t, s, doc)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("%v", errs)
}

func norm(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func validateType(t any, s map[string]any, doc any) error {
	num := func(k string) int {
		f, ok := s[k].(float64)
		if !ok {
			return -1
		}
		return int(f)
	}
	switch t {
	case "null":
		if doc != nil {
			return fmt.Errorf("%v is not null", doc)
		}
	case "boolean":
		if _, ok := doc.(bool); !ok {
			return fmt.Errorf("%v is not a boolean", doc)
		}
	case "integer", "number":
		f, ok := doc.(float64)
		if !ok || t == "integer" && f != float64(int64(f)) {
			return fmt.Errorf("%v is not an %s", doc, t)
		}
	case "string":
		str, ok := doc.(string)
		n := utf8.RuneCountInString(str)
		if !ok || num("minLength") >= 0 && n < num("minLength") || num("maxLength") >= 0 && n > num("maxLength") {
			return fmt.Errorf("%q is not a string of the right length", doc)
		}
	case "array":
		a, ok := doc.([]any)
		if !ok || num("minItems") >= 0 && len(a) < num("minItems") || num("maxItems") >= 0 && len(a) > num("maxItems") {
			return fmt.Errorf("%v is not an array of the right length", doc)
		}
		for _, x := range a {
			if err := validate(s["items"], x); err != nil {
				return err
			}
		}
	case "object", nil:
		o, ok := doc.(map[string]any)
		if !ok {
			if t == nil {
				return nil
			}
			return fmt.Errorf("%v is not an object", doc)
		}
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, r := range req {
			if _, ok := o[r.(string)]; !ok {
				return fmt.Errorf("%v lacks %v", doc, r)
			}
		}
		for k, v := range o {
			p, ok := props[k]
			if !ok && s["additionalProperties"] == false {
				return fmt.Errorf("%v has the extra member %q", doc, k)
			}
			if err := validate(p, v); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("type %v", t)
	}
	return nil
}
