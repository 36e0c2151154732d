package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigErrorsBlameTheRightFile: an out-of-vocabulary eos_token_id from generation_config.json
// is that file's error, not config.json's; an integer out of range says so.
func TestConfigErrorsBlameTheRightFile(t *testing.T) {
	dir := t.TempDir()
	cfgPath, genPath := filepath.Join(dir, "config.json"), filepath.Join(dir, "generation_config.json")
	noErr(t, os.WriteFile(cfgPath, []byte(`{"eos_token_id":1}`), 0o644))
	noErr(t, os.WriteFile(genPath, []byte(`{"eos_token_id":[1,999999999]}`), 0o644))
	_, err := LoadConfig(dir)
	errHas(t, err, genPath, "eos_token_id 999999999 is outside the vocabulary")
	if strings.Contains(err.Error(), cfgPath+":") {
		t.Fatalf("blamed on config.json: %v", err)
	}
	for _, c := range []struct{ cfg, want string }{
		{`{"vocab_size":1000000000000}`, "vocab_size: 1000000000000 is out of range"},
		{`{"vocab_size":99999999999999999999999}`, "vocab_size: 99999999999999999999999 is out of range"},
		{`{"vocab_size":1.5}`, "vocab_size: want an integer"},
	} {
		_, err := ParseConfig([]byte(c.cfg), nil)
		errHas(t, err, c.want)
	}
}
