package main

import (
	"slices"
	"testing"
)

func TestAsyncPreemptOffEnv(t *testing.T) {
	for _, c := range []struct {
		in, want []string
		change   bool
	}{
		{[]string{"A=1"}, []string{"A=1", "GODEBUG=asyncpreemptoff=1"}, true},
		{[]string{"GODEBUG=", "A=1"}, []string{"GODEBUG=asyncpreemptoff=1", "A=1"}, true},
		// An existing GODEBUG is extended where it stands: a second entry would be ignored by the
		// runtime, and lily would re-exec itself forever.
		{[]string{"GODEBUG=madvdontneed=1", "A=1"}, []string{"GODEBUG=madvdontneed=1,asyncpreemptoff=1", "A=1"}, true},
		{[]string{"GODEBUG=x=1", "GODEBUG=y=1"}, []string{"GODEBUG=x=1,asyncpreemptoff=1"}, true},
		{[]string{"GODEBUG=asyncpreemptoff=0"}, []string{"GODEBUG=asyncpreemptoff=0"}, false},
		{[]string{"A=1", "GODEBUG=asyncpreemptoff=1"}, []string{"A=1", "GODEBUG=asyncpreemptoff=1"}, false},
	} {
		got, change := asyncPreemptOffEnv(c.in)
		if change != c.change || !slices.Equal(got, c.want) {
			t.Errorf("%q: got %q, %v; want %q, %v", c.in, got, change, c.want, c.change)
		}
	}
}
