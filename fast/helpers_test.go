package fast

import (
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
)

// openTiny opens fixture tiny-a (MLX layout) with options o; both close when the test ends. It
// returns the model and its config's vocabulary size.
func openTiny(t testing.TB, o Options) (*Model, int) {
	t.Helper()
	ck, err := checkpoint.Open("../fixtures/models/tiny-a/mlx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	b, err := Open(ck.Weights, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b.(*Model), ck.Weights.Config.VocabSize
}
