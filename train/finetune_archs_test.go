package train

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// fusedArchFixtures are open/hf's GPT-NeoX (Pythia's layout), GPT-Neo,
// Phi-3 and OLMo 2 fixtures (random weights, 64 ids), each given a
// byte-level vocab.json of 64 tokens (space, newline, letters and digits)
// and no merges, on textLines.
func fusedArchFixtures() []pretrainedFixture {
	var out []pretrainedFixture
	for _, variant := range []string{"pythia", "tinystories", "phi3", "olmo2"} {
		out = append(out, pretrainedFixture{"hf-" + variant, func(t *testing.T, dir string) {
			for _, name := range []string{"config.json", "model.safetensors"} {
				copyFile(t, filepath.Join("../open/hf/testdata", variant, name), filepath.Join(dir, name))
			}
			vocab := map[string]int{"Ġ": 0, "Ċ": 1}
			for _, r := range "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" {
				vocab[string(r)] = len(vocab)
			}
			raw, err := json.Marshal(vocab)
			if err != nil {
				t.Fatal(err)
			}
			writeText(t, filepath.Join(dir, "vocab.json"), string(raw))
			writeText(t, filepath.Join(dir, "merges.txt"), "#version: 0.2\n")
		}, func(t *testing.T) string { return textLines }})
	}
	return out
}

// TestFineTuneFusedArchitecturesResume: fine-tuning each of these
// architectures from its Hugging Face directory (its parallel residual,
// partial rotary, local layers, unscaled scores, post-norms and
// whole-projection QK-norm trained) dies at step 19, resumes from the
// checkpoint of step 16 with the pretrained directory gone, and ends
// bit-identical to a run never stopped.
func TestFineTuneFusedArchitecturesResume(t *testing.T) {
	for _, fx := range fusedArchFixtures() {
		t.Run(fx.name, func(t *testing.T) {
			pre, cfg := fineTuneSetup(t, fx)
			want := filepath.Join(t.TempDir(), "want")
			runOK(t, cfg, Options{Dir: want})
			dir := filepath.Join(t.TempDir(), "crashed")
			crashAt(t, cfg, dir, 19)
			if err := os.RemoveAll(pre); err != nil {
				t.Fatal(err)
			}
			if res := runOK(t, cfg, Options{Dir: dir, Resume: true}); res.FirstStep != 17 {
				t.Errorf("resumed at step %d, want 17", res.FirstStep)
			}
			sameRun(t, want, dir)
		})
	}
}
