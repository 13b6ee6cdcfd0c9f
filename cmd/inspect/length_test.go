package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/model"
)

// familyCheckpoint saves an untrained copy model (length 4) of the given
// attention variant and returns its path.
func familyCheckpoint(t *testing.T, cfg model.Config) string {
	t.Helper()
	cfg.Vocab, cfg.Context, cfg.DModel, cfg.Heads, cfg.Layers, cfg.OutBias = 9, 8, 16, 4, 1, true
	m, err := model.New(cfg, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	runConfig, err := json.Marshal(map[string]any{"task": map[string]any{"name": "copy", "length": 4, "symbols": 8}, "model": cfg})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "family.safetensors")
	if err := model.Save(path, m, runConfig, 0); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLengthAndFamily: -length shows an example of another task length on
// a model whose positions allow it (rope: 12 positions on a model trained
// on 8), names the
// variant in the text header, the PNG title's source (the JSON's family),
// and is refused beyond a learned position table with a one-line message.
func TestLengthAndFamily(t *testing.T) {
	rope := familyCheckpoint(t, model.Config{Position: "rope", KVHeads: 2, Window: 3})
	var out, errOut bytes.Buffer
	if err := run([]string{"-checkpoint", rope, "-length", "6", "-color", "never"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.Contains(text, "rope positions (base 10000), 2 kv heads (grouped-query), window 3") {
		t.Errorf("header does not name the variant:\n%s", text[:min(len(text), 300)])
	}
	if !strings.Contains(text, "position     0   1   2   3   4   5   6   7   8   9  10  11") {
		t.Errorf("-length 6 does not show 12 positions:\n%s", text[:min(len(text), 600)])
	}
	out.Reset()
	if err := run([]string{"-checkpoint", rope, "-length", "6", "-json"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var j struct {
		Tokens []int  `json:"tokens"`
		Family string `json:"family"`
	}
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Tokens) != 12 || j.Family != "rope positions (base 10000), 2 kv heads (grouped-query), window 3" {
		t.Errorf("JSON has %d tokens and family %q", len(j.Tokens), j.Family)
	}
	learned := familyCheckpoint(t, model.Config{})
	refused(t, "-length beyond a learned table", []string{"-checkpoint", learned, "-length", "6"},
		"-length 6: the example has 12 positions, beyond the model's learned position table of 8")
}
