// Package grammar constrains generated text to a language over bytes: a JSON schema's documents
// (structured output) or a chat format's tool call. A Grammar is a tree of Nodes; a Matcher
// follows a text byte by byte and says whether it is still a prefix of some sentence; a Vocab
// turns that into the set of tokens allowed next.
//
// JSON is generated compact (no insignificant white space), which every JSON parser accepts and
// which keeps a sampled document from wandering in white space.
package grammar

import "fmt"

type kind uint8

const (
	kLit       kind = iota // the bytes of lit
	kSeq                   // kids in order
	kAlt                   // one of kids
	kStar                  // item repeated 0 or more times
	kWS                    // up to max bytes of JSON white space
	kString                // a JSON string, with minLen/maxLen characters
	kInteger               // a JSON integer
	kNumber                // a JSON number
	kObject                // a JSON object with props in order (optional ones may be left out)
	kAnyObject             // a JSON object with any members (item: a member "key":value)
	kArray                 // a JSON array of item, minItems..maxItems
	kUntil                 // any bytes up to and including the first occurrence of lit
)

// Node is one element of a grammar. Build nodes with the constructors; they are immutable once
// compiled into a Grammar.
type Node struct {
	kind     kind
	lit      string
	kids     []*Node
	item     *Node
	props    []prop
	min, max int   // kString: characters; kArray: items; kWS: max bytes (-1: no max)
	short    int   // bytes of the shortest sentence, set by Compile
	id       int32 // position in the compiled grammar, for matcher keys
}

type prop struct {
	first, next *Node // `"key":` and `,"key":`
	value       *Node
	required    bool
}

// Lit matches s exactly.
func Lit(s string) *Node { return &Node{kind: kLit, lit: s} }

// Seq matches its nodes one after the other.
func Seq(nodes ...*Node) *Node { return &Node{kind: kSeq, kids: nodes} }

// Alt matches any one of its nodes.
func Alt(nodes ...*Node) *Node { return &Node{kind: kAlt, kids: nodes} }

// Star matches n zero or more times; n must not match the empty text.
func Star(n *Node) *Node { return &Node{kind: kStar, item: n} }

// WS matches up to max bytes of white space (space, tab, newline, carriage return).
func WS(max int) *Node { return &Node{kind: kWS, max: max} }

// String matches a JSON string of minLen to maxLen characters (maxLen < 0: no limit).
func String(minLen, maxLen int) *Node { return &Node{kind: kString, min: minLen, max: maxLen} }

// Integer matches a JSON integer (at most 15 digits, so that it is exact in a float64).
func Integer() *Node { return &Node{kind: kInteger} }

// Number matches a JSON number.
func Number() *Node { return &Node{kind: kNumber} }

// Until matches any bytes up to and including the first occurrence of end.
func Until(end string) *Node { return &Node{kind: kUntil, lit: end} }

// Array matches a JSON array of minItems to maxItems (maxItems < 0: no limit) items.
func Array(item *Node, minItems, maxItems int) *Node {
	return &Node{kind: kArray, item: item, min: minItems, max: maxItems}
}

// Property is one member of an Object.
type Property struct {
	Name     string
	Value    *Node
	Required bool
}

// Object matches a JSON object whose members are props in the given order, the optional ones
// possibly left out.
func Object(props ...Property) *Node {
	n := &Node{kind: kObject}
	for _, p := range props {
		key := jsonString(p.Name)
		n.props = append(n.props, prop{first: Lit(key + ":"), next: Lit("," + key + ":"), value: p.Value, required: p.Required})
	}
	return n
}

// AnyValue matches any JSON value (objects and arrays nested to any depth the matcher allows).
func AnyValue() *Node {
	v := &Node{kind: kAlt}
	member := Seq(String(0, -1), Lit(":"), v)
	v.kids = []*Node{
		{kind: kAnyObject, item: member},
		Array(v, 0, -1),
		String(0, -1), Number(), Lit("true"), Lit("false"), Lit("null"),
	}
	return v
}

// AnyObject matches any JSON object (response_format json_object).
func AnyObject() *Node { return AnyValue().kids[0] }

// Grammar is a compiled grammar.
type Grammar struct {
	root *Node
}

// Compile checks root and computes what matching needs.
func Compile(root *Node) (*Grammar, error) {
	if err := shortest(root, map[*Node]bool{}); err != nil {
		return nil, err
	}
	return &Grammar{root: root}, nil
}

// MinLen is the length in bytes of the grammar's shortest sentence.
func (g *Grammar) MinLen() int { return g.root.short }

// inf stands for "no finite sentence" while shortest lengths are computed.
const inf = 1 << 30

// shortest sets n.short for n and everything under it. Recursive grammars (AnyValue) are solved
// by iterating to a fixed point.
func shortest(root *Node, seen map[*Node]bool) error {
	var all []*Node
	var walk func(n *Node) error
	walk = func(n *Node) error {
		if n == nil || seen[n] {
			return nil
		}
		seen[n] = true
		n.short = inf
		n.id = int32(len(all))
		all = append(all, n)
		for _, k := range n.kids {
			if err := walk(k); err != nil {
				return err
			}
		}
		if err := walk(n.item); err != nil {
			return err
		}
		for _, p := range n.props {
			for _, k := range []*Node{p.first, p.next, p.value} {
				if err := walk(k); err != nil {
					return err
				}
			}
		}
		switch {
		case n.kind == kUntil && n.lit == "":
			return fmt.Errorf("grammar: Until needs an end")
		case (n.kind == kStar || n.kind == kArray || n.kind == kAnyObject) && n.item == nil:
			return fmt.Errorf("grammar: a repeat without an item")
		case n.kind == kArray && n.max >= 0 && n.max < n.min, n.kind == kString && n.max >= 0 && n.max < n.min:
			return fmt.Errorf("grammar: max below min (%d < %d)", n.max, n.min)
		}
		return nil
	}
	if err := walk(root); err != nil {
		return err
	}
	for changed := true; changed; {
		changed = false
		for _, n := range all {
			if s := n.computeShort(); s < n.short {
				n.short, changed = s, true
			}
		}
	}
	for _, n := range all {
		if n.kind == kStar && n.item.short == 0 {
			return fmt.Errorf("grammar: a repeated item matches the empty text")
		}
		if n.short >= inf {
			return fmt.Errorf("grammar: a node matches no finite text")
		}
	}
	return nil
}

func (n *Node) computeShort() int {
	add := func(a, b int) int { return min(a+b, inf) }
	switch n.kind {
	case kLit, kUntil:
		return len(n.lit)
	case kSeq:
		s := 0
		for _, k := range n.kids {
			s = add(s, k.short)
		}
		return s
	case kAlt:
		s := inf
		for _, k := range n.kids {
			s = min(s, k.short)
		}
		return s
	case kStar, kWS:
		return 0
	case kString:
		return 2 + n.min
	case kInteger, kNumber:
		return 1
	case kAnyObject:
		return 2
	case kArray:
		if n.min == 0 {
			return 2
		}
		return add(1+n.min, n.min*n.item.short)
	case kObject:
		s := 2
		first := true
		for _, p := range n.props {
			if p.required {
				key := p.next
				if first {
					key = p.first
				}
				s, first = add(s, add(key.short, p.value.short)), false
			}
		}
		return s
	}
	return inf
}

// jsonString is s as a JSON string literal.
func jsonString(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20:
			b = append(b, fmt.Sprintf(`\u%04x`, r)...)
		default:
			b = append(b, string(r)...)
		}
	}
	return string(append(b, '"'))
}
