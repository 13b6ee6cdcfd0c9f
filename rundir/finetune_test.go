package rundir

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/initfrom"
	"github.com/attnscope/attnscope/internal/msg/msgtest"
	"github.com/attnscope/attnscope/model"
)

// stubPretrained is a pretrained model as OpenPretrained returns it, for
// the config alone: nanoGPT's character model's shape (context 32).
func stubPretrained() Pretrained {
	return Pretrained{
		Model: model.Config{Vocab: 49, Context: 32, DModel: 32, Heads: 2, Layers: 2, MLP: true, DFF: 128,
			QKVBias: true, OutBias: true, Activation: model.ActivationGELU, TieEmbeddings: true},
		Record: initfrom.Record{Path: "/models/shakespeare", Source: "nanoGPT", Vocab: 49, Context: 32,
			Files: []initfrom.FileRecord{
				{Path: "/models/shakespeare/ckpt.pt", Size: 373628, SHA256: strings.Repeat("ab", 32)},
				{Path: "/models/shakespeare/meta.pkl", Size: 545, SHA256: strings.Repeat("cd", 32)},
			},
			Tokenizer: []string{"meta.pkl"}},
	}
}

// loadFineTune writes yml (over a text file it makes, named by %TEXT) and
// reads it as train does, with the stub opener; opened counts its calls.
func loadFineTune(t *testing.T, yml string, sets []string, opened *int) (Config, error) {
	t.Helper()
	dir := t.TempDir()
	text := filepath.Join(dir, "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("to be or not to be\n", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "finetune.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(yml, "%TEXT", text)), 0o644); err != nil {
		t.Fatal(err)
	}
	return LoadConfigFrom(path, sets, func(from string) (Pretrained, error) {
		*opened++
		if from != "/models/shakespeare" {
			return Pretrained{}, errors.New("no such model")
		}
		return stubPretrained(), nil
	})
}

const fineTuneSrc = `init_from: /models/shakespeare
task: {name: text, path: %TEXT, length: 16}
`

// TestFineTuneConfig: a config naming init_from takes its model section
// from the pretrained model (a key repeating its value, and model.dropout,
// may be given), records it (init), keeps the model's whole context while
// the windows are task.length, and round-trips through config.yaml and a
// checkpoint's JSON.
func TestFineTuneConfig(t *testing.T) {
	opened := 0
	cfg, err := loadFineTune(t, fineTuneSrc+"model: {heads: 2, dropout: 0.1}\n", nil, &opened)
	if err != nil {
		t.Fatal(err)
	}
	want := stubPretrained()
	want.Model.Dropout, want.Model.Attention = 0.1, "fused"
	if cfg.Model != want.Model || !reflect.DeepEqual(cfg.Init, want.Record) || opened != 1 {
		t.Errorf("model %+v\ninit %+v (opened %d times)\nwant %+v\n%+v", cfg.Model, cfg.Init, opened, want.Model, want.Record)
	}
	if cfg.Task.Chars != "" || !cfg.Task.File.Recorded() {
		t.Errorf("task %+v: want the text's record and no characters", cfg.Task)
	}
	roundTrip(t, "fine-tune", cfg)
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	back, err := fromJSON(raw)
	if err != nil || !reflect.DeepEqual(back, cfg) || back.ValidateModel() != nil {
		t.Errorf("through JSON: %v (%v)\n got %+v\nwant %+v", err, back.ValidateModel(), back, cfg)
	}
}

// TestFineTuneConfigErrors: what a fine-tuning config cannot be is one
// line naming the key and the values; mistakes the config shows alone are
// refused before the pretrained model is opened.
func TestFineTuneConfigErrors(t *testing.T) {
	cases := []struct {
		name, src string
		sets      []string
		opens     bool // whether the pretrained model is opened first
		want      []string
	}{
		{"a model key that disagrees", fineTuneSrc + "model: {heads: 4, layers: 2}\n", nil, true,
			[]string{"the model section disagrees with the pretrained model (model.heads: given 4, pretrained 2)", "only model.dropout and model.attention may differ"}},
		{"a -set that disagrees", fineTuneSrc, []string{"model.position=rope"}, true, []string{"model.position: given rope, pretrained <nil>"}},
		{"not text", "init_from: /models/shakespeare\ntask: {name: copy, length: 4, symbols: 8}\n", nil, false,
			[]string{`task.name = "copy", but fine-tuning trains on text`}},
		{"a bad lr", fineTuneSrc + "train: {lr: -1}\n", nil, false, []string{"train.lr = -1: must be positive"}},
		{"eval lengths", fineTuneSrc + "train: {eval_lengths: [8]}\n", nil, false, []string{"train.eval_lengths = [8]: not with init_from"}},
		{"windows past the context", fineTuneSrc, []string{"task.length=64"}, true,
			[]string{"task.length = 64: longer than the pretrained model's context of 32 (its learned position table)"}},
		{"too big to train", fineTuneSrc, []string{"train.batch_size=10000000"}, true,
			[]string{"fine-tuning nanoGPT with the graphs of 10000000 training windows of 16 tokens and the evaluation (besides ", "of weights, gradients and Adam moments) needs an estimated", "(limit 8.0 GiB); reduce train.batch_size, train.eval_size or task.length"}},
		{"no such model", strings.Replace(fineTuneSrc, "shakespeare", "nothing", 1), nil, true, []string{`init_from = "/models/nothing": no such model`}},
		{"a record given", fineTuneSrc + "init: {path: /x}\n", nil, false, []string{"init cannot be set: train records the pretrained model"}},
	}
	for _, c := range cases {
		opened := 0
		_, err := loadFineTune(t, c.src, c.sets, &opened)
		msgtest.Refusal(t, c.name, err, c.want...)
		if (opened == 1) != c.opens {
			t.Errorf("%s: opened the pretrained model %d times", c.name, opened)
		}
	}
	_, err := ParseConfig("x.yaml", []byte("init_from: /models/shakespeare\n"), nil)
	msgtest.Refusal(t, "without an opener", err, `x.yaml: init_from = "/models/shakespeare" names a pretrained model, which only train opens`)
}

// TestFineTuneMemoryAgainstTheMachine: a fine-tuning run's graphs are held
// to MaxMemory, but the pretrained model's weights, gradients and moments
// only to the memory the machine has available: GPT-2 medium's shape at
// configs/finetune.yaml's batch, estimated past 8 GiB, passes with 14 GiB
// available (a 16 GB machine), is refused with 6 GiB naming both figures,
// and passes where the available memory is unknown.
func TestFineTuneMemoryAgainstTheMachine(t *testing.T) {
	cfg, err := loadFineTune(t, fineTuneSrc+"train: {batch_size: 4, eval_size: 8}\n", []string{"task.length=32"}, new(int))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model = model.Config{Vocab: 50257, Context: 1024, DModel: 1024, Heads: 16, Layers: 24, MLP: true, DFF: 4096,
		QKVBias: true, OutBias: true, Activation: model.ActivationGELU, TieEmbeddings: true}
	cfg.Task.Length = 64
	if est := cfg.EstimateBytes(); est <= MaxMemory {
		t.Fatalf("GPT-2 medium's estimate %v is within MaxMemory: the case no longer tests the rule", est)
	}
	const gib = 1 << 30
	if err := cfg.checkFineTuneMemory(14*gib, true); err != nil {
		t.Errorf("14 GiB available: %v", err)
	}
	if err := cfg.checkFineTuneMemory(0, false); err != nil {
		t.Errorf("available memory unknown: %v", err)
	}
	err = cfg.checkFineTuneMemory(6*gib, true)
	msgtest.Refusal(t, "6 GiB available", err, "fine-tuning nanoGPT (", "of weights, gradients and Adam moments,", "of graphs) needs ",
		"resident; the machine has 6.0 GiB available (MemAvailable, with 1.0 GiB kept free); reduce train.batch_size, train.eval_size or task.length, or fine-tune a smaller model")
}
