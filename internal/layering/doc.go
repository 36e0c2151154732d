// Package layering holds the test of lily's import graph (design.md §2): cmd → server → engine;
// cmd → {ref, fast, metal}; no engine imports another engine or ref. It has no code of its own.
package layering
