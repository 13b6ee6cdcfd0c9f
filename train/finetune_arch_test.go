package train

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/attnscope/attnscope/open"
)

// archFixtures are one of open/hf's fixtures of each architecture of issue
// 45 it reads (Llama 3.x's llama3 rope scaling; Qwen 3 with a window on
// one layer; Gemma 2 in BF16 shards; Gemma 3 and the text model of a
// Gemma 3 vision model), each given a byte-level vocab.json of its 64 ids: the capital
// letters first (the config's special ids fall among them, and the text
// has none), then the small letters, the digits, space and newline.
var archFixtures = []string{"llama3", "qwen3_bf16", "gemma2_bf16", "gemma3", "gemma3_vlm"}

func archFixture(name string) pretrainedFixture {
	return pretrainedFixture{name, func(t *testing.T, dir string) {
		src := filepath.Join("../open/hf/testdata", name)
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			copyFile(t, filepath.Join(src, e.Name()), filepath.Join(dir, e.Name()))
		}
		vocab := map[string]int{}
		for _, r := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789ĠĊ" {
			vocab[string(r)] = len(vocab)
		}
		raw, err := json.Marshal(vocab)
		if err != nil {
			t.Fatal(err)
		}
		writeText(t, filepath.Join(dir, "vocab.json"), string(raw))
		writeText(t, filepath.Join(dir, "merges.txt"), "#version: 0.2\n")
	}, func(t *testing.T) string { return textLines }}
}

// TestFineTuneEachArchitecture: fine-tuning each architecture's fixture
// starts from the loaded model (the first step's loss is the model's own
// on that batch, from a forward-only graph) and, killed at step 19 after
// the checkpoint of step 16, resumes from its checkpoint with the
// pretrained directory gone and ends bit-identical to a run never stopped.
func TestFineTuneEachArchitecture(t *testing.T) {
	for _, name := range archFixtures {
		t.Run(name, func(t *testing.T) {
			pre, cfg := fineTuneSetup(t, archFixture(name), "model.dropout=0")
			op, err := open.Open(pre, open.Options{})
			if err != nil {
				t.Fatal(err)
			}
			wantLoss := pretrainedLoss(t, op, cfg)
			want := filepath.Join(t.TempDir(), "want")
			runOK(t, cfg, Options{Dir: want})
			if first := withoutTiming(t, want)[0]["loss"].(float64); math.Abs(first-wantLoss) > 1e-5*wantLoss {
				t.Errorf("first step's loss %v, the pretrained model's on that batch %v", first, wantLoss)
			}
			dir := filepath.Join(t.TempDir(), "crashed")
			crashAt(t, cfg, dir, 19)
			if err := os.RemoveAll(pre); err != nil {
				t.Fatal(err)
			}
			res := runOK(t, cfg, Options{Dir: dir, Resume: true})
			if res.FirstStep != 17 {
				t.Errorf("resumed at step %d, want 17", res.FirstStep)
			}
			sameRun(t, want, dir)
		})
	}
}
