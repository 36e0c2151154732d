package server

import (
	"errors"
	"math"
	"slices"
)

// endAfter is a constraint that ends the turn once the token `after` is generated: from then on
// only the stop ids are allowed (parallel_tool_calls false: one call, then the end of the turn).
type endAfter struct {
	after int32
	stops []int32
	done  bool
}

func (c *endAfter) Mask(logits []float32) error {
	if !c.done {
		return nil
	}
	return onlyStops(logits, c.stops)
}

func (c *endAfter) Accept(id int32) error {
	c.done = c.done || id == c.after
	return nil
}

var negInf = math.Inf(-1)

func isStop(id int32, stops []int32) bool { return slices.Contains(stops, id) }

// onlyStops masks every id but the stop ids. logits: [V].
func onlyStops(logits []float32, stops []int32) error {
	ok := false
	for i := range logits {
		if slices.Contains(stops, int32(i)) {
			ok = true
			continue
		}
		logits[i] = float32(math.Inf(-1))
	}
	if !ok {
		return errors.New("no stop id to end the turn with")
	}
	return nil
}
