package train

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/initfrom"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/open/opentest"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/tokenizer"
)

// pretrainedFixture is a model trained elsewhere, with its tokenizer, that
// write puts into a directory, and text in its tokenizer's alphabet.
type pretrainedFixture struct {
	name  string
	write func(t *testing.T, dir string)
	text  func(t *testing.T) string
}

// pretrainedFixtures: nanoGPT's character model (ckpt.pt beside its
// meta.pkl) on its own corpus, and a Hugging Face GPT-2 (open/hf's distil
// fixture, random weights, 96 ids) given a byte-level vocab.json of 96
// tokens (the printable ASCII bytes, space and newline) and no merges.
var pretrainedFixtures = []pretrainedFixture{
	{"nanogpt", func(t *testing.T, dir string) {
		copyFile(t, "../open/nanogpt/testdata/bias/ckpt.pt", filepath.Join(dir, "ckpt.pt"))
		copyFile(t, "../open/nanogpt/testdata/meta.pkl", filepath.Join(dir, "meta.pkl"))
	}, func(t *testing.T) string { return readFile(t, "../open/nanogpt/testdata/corpus.txt") }},
	{"hf-gpt2", func(t *testing.T, dir string) {
		for _, name := range []string{"config.json", "model.safetensors"} {
			copyFile(t, filepath.Join("../open/hf/testdata/distil", name), filepath.Join(dir, name))
		}
		vocab := map[string]int{"Ġ": 0, "Ċ": 1}
		for b := byte(33); b <= 126; b++ {
			vocab[string(rune(b))] = len(vocab)
		}
		raw, err := json.Marshal(vocab)
		if err != nil {
			t.Fatal(err)
		}
		writeText(t, filepath.Join(dir, "vocab.json"), string(raw))
		writeText(t, filepath.Join(dir, "merges.txt"), "#version: 0.2\n")
	}, func(t *testing.T) string { return textLines }},
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	writeText(t, to, readFile(t, from))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fineTuneYAML fine-tunes the model in %s on the text in %s: windows of 16
// tokens, dropout, weight decay, warmup and cosine, and the checkpoints,
// evaluations, probes (off by default with init_from) and 24 steps sameRun
// expects.
const fineTuneYAML = `
seed: 7
init_from: %s
task: {name: text, path: %s, length: 16}
model: {dropout: 0.1}
train: {batch_size: 4, steps: 24, lr: 3.0e-3, schedule: cosine, warmup_steps: 2, min_lr: 1.0e-4, weight_decay: 0.1,
        log_every: 1, eval_every: 6, eval_size: 32, checkpoint_every: 8, probes: on}
`

// fineTuneSetup writes fixture f into a new directory and its text beside
// it, and returns the pretrained directory and the run config.
func fineTuneSetup(t *testing.T, f pretrainedFixture, sets ...string) (string, rundir.Config) {
	t.Helper()
	dir := t.TempDir()
	pre, text := filepath.Join(dir, "pretrained"), filepath.Join(dir, "text.txt")
	if err := os.Mkdir(pre, 0o755); err != nil {
		t.Fatal(err)
	}
	f.write(t, pre)
	writeText(t, text, f.text(t))
	return pre, fineTuneConfig(t, fmt.Sprintf(fineTuneYAML, pre, text), sets...)
}

// fineTuneConfig reads yml as cmd/train reads a config, opening its
// pretrained model with OpenPretrained.
func fineTuneConfig(t *testing.T, yml string, sets ...string) rundir.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "finetune.yaml")
	writeText(t, path, yml)
	cfg, err := rundir.LoadConfigFrom(path, sets, func(from string) (rundir.Pretrained, error) {
		pre, err := OpenPretrained(from, nil)
		if err != nil {
			return rundir.Pretrained{}, err
		}
		return pre.Config(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// eachPretrained runs f once per fixture, as a subtest named after it.
func eachPretrained(t *testing.T, f func(t *testing.T, fx pretrainedFixture)) {
	for _, fx := range pretrainedFixtures {
		t.Run(fx.name, func(t *testing.T) { f(t, fx) })
	}
}

// TestFineTuneStartsFromPretrained: the first step's training loss is the
// pretrained model's own loss on that step's batch, computed apart from
// training (the model opened as inspect opens it, a forward-only graph,
// the cross-entropy here in float64), each row of the batch being a window
// of the text's tokens; the run changes the weights, lowers the held-out
// loss, and its checkpoint carries the pretrained model's whole config
// (its context, not the window's).
func TestFineTuneStartsFromPretrained(t *testing.T) {
	eachPretrained(t, func(t *testing.T, fx pretrainedFixture) {
		pre, cfg := fineTuneSetup(t, fx, "model.dropout=0")
		dir := filepath.Join(t.TempDir(), "run")
		runOK(t, cfg, Options{Dir: dir})
		op, err := open.Open(pre, open.Options{})
		if err != nil {
			t.Fatal(err)
		}
		lines := withoutTiming(t, dir)
		if first, want := lines[0]["loss"].(float64), pretrainedLoss(t, op, cfg); math.Abs(first-want) > 1e-5*want {
			t.Errorf("first step's loss %v, the pretrained model's on that batch %v", first, want)
		}
		var evals []float64
		for _, l := range lines {
			if v, ok := l["eval_loss"].(float64); ok {
				evals = append(evals, v)
				checkLanguageFigure(t, l, "perplexity", math.Exp(v))
			}
		}
		if len(evals) != 4 || evals[3] >= evals[0] {
			t.Errorf("eval_loss over the run %v: want it lower at the end", evals)
		}
		ck := lastCheckpoint(t, dir)
		want := op.Model.Config
		want.Attention = cfg.Model.Attention
		if ck.Model.Config != want {
			t.Errorf("checkpoint's model %+v, want the pretrained %+v", ck.Model.Config, want)
		}
		if sameWeights(t, ck.Model, op.Model) {
			t.Error("the checkpoint holds the pretrained weights unchanged")
		}
	})
}

// pretrainedLoss is the mean cross-entropy of the pretrained model op on
// the batch of step 1 of cfg, from the logits of a forward-only graph; it
// also checks that each row is a window of the text's tokens.
func pretrainedLoss(t *testing.T, op *open.Opened, cfg rundir.Config) float64 {
	t.Helper()
	task, err := data.NewTokenText(cfg.Task, op.Tokenizer, op.Model.Config.Vocab)
	if err != nil {
		t.Fatal(err)
	}
	b, n := cfg.Train.BatchSize, cfg.Task.Length
	batch := data.NewBatch(b, n)
	if err := data.Fill(task, batch, data.StepRNG(cfg.Seed, 1)); err != nil {
		t.Fatal(err)
	}
	text := readFile(t, cfg.Task.Path)
	for r := range b {
		window := string(tokenizer.Decode(op.Tokenizer, append(batch.Tokens[r*n:(r+1)*n:(r+1)*n], batch.Targets[(r+1)*n-1])))
		if !strings.Contains(text, window) {
			t.Fatalf("row %d, %q, is not a window of the text", r, window)
		}
	}
	logits, v := opentest.Logits(t, op.Model, batch), op.Model.Config.Vocab
	total := 0.0
	for i, target := range batch.Targets {
		row := logits[i*v : (i+1)*v]
		top := row[0]
		for _, x := range row {
			top = math.Max(top, x)
		}
		sum := 0.0
		for _, x := range row {
			sum += math.Exp(x - top)
		}
		total += top + math.Log(sum) - row[target]
	}
	return total / float64(len(batch.Targets))
}

// sameWeights reports whether two models hold equal weights.
func sameWeights(t *testing.T, a, b *model.Model) bool {
	t.Helper()
	for i, p := range a.Params {
		if !reflect.DeepEqual(p.Value.Data(), b.Params[i].Value.Data()) {
			return false
		}
	}
	return true
}

// crashAt runs cfg in dir until the observer sees step, where the process
// "dies" (a panic, as testResumeAfterCrash's).
func crashAt(t *testing.T, cfg rundir.Config, dir string, step int) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Fatal("the simulated crash did not happen")
		}
	}()
	_, _ = Run(context.Background(), cfg, Options{Dir: dir, Probes: analysisProbes, Observer: func(e Event) {
		if e.Step == step {
			panic("crash")
		}
	}})
}

// TestFineTuneResumeAfterCrash: a fine-tuning run that dies at step 19
// (after the checkpoint of step 16) resumes from its checkpoint, with its
// copy of the tokenizer, the pretrained directory gone, and ends
// bit-identical to a run never stopped.
func TestFineTuneResumeAfterCrash(t *testing.T) {
	eachPretrained(t, func(t *testing.T, fx pretrainedFixture) {
		pre, cfg := fineTuneSetup(t, fx)
		want := filepath.Join(t.TempDir(), "want")
		runOK(t, cfg, Options{Dir: want})
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

// TestFineTuneResumeChecksPretrained: a run killed before its first
// checkpoint must read the pretrained model again; a file of it that
// changed since (one byte appended to the weights) is refused, named, in
// one line, before it is read; restored, the run resumes and ends
// bit-identical to a run never stopped.
func TestFineTuneResumeChecksPretrained(t *testing.T) {
	eachPretrained(t, func(t *testing.T, fx pretrainedFixture) {
		_, cfg := fineTuneSetup(t, fx)
		want := filepath.Join(t.TempDir(), "want")
		runOK(t, cfg, Options{Dir: want})
		dir := filepath.Join(t.TempDir(), "crashed")
		crashAt(t, cfg, dir, 3)
		weights := cfg.Init.Files[1].Path // after config.json (Hugging Face) or ckpt.pt itself (nanoGPT)
		if fx.name == "nanogpt" {
			weights = cfg.Init.Files[0].Path
		}
		original := readFile(t, weights)
		writeText(t, weights, original+"\x00")
		_, err := Run(context.Background(), cfg, Options{Dir: dir, Resume: true})
		if err == nil || !strings.Contains(err.Error(), filepath.Base(weights)+" (in ") || !strings.Contains(err.Error(), ": the file changed since the run started from it") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("resume over a changed %s: %v", weights, err)
		}
		writeText(t, weights, original)
		runOK(t, cfg, Options{Dir: dir, Resume: true})
		sameRun(t, want, dir)
	})
}

// TestFineTunedOpensAlone: a fine-tuned run's checkpoint opens, as inspect
// and sample open it, with the pretrained directory removed: the run's copy
// of the tokenizer encodes as the original did, the model is the
// pretrained one's shape, the run config the checkpoint's (which the run's
// logs and pages pair with). A copy that is not the file the run recorded is
// refused, naming it.
func TestFineTunedOpensAlone(t *testing.T) {
	eachPretrained(t, func(t *testing.T, fx pretrainedFixture) {
		pre, cfg := fineTuneSetup(t, fx, "train.steps=2", "train.eval_every=0", "train.warmup_steps=0")
		original, err := open.Open(pre, open.Options{})
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "run")
		runOK(t, cfg, Options{Dir: dir})
		if err := os.RemoveAll(pre); err != nil {
			t.Fatal(err)
		}
		op, err := open.Open(dir, open.Options{})
		if err != nil {
			t.Fatal(err)
		}
		text := "the keeper wrote"
		got, errGot := op.Tokenizer.Encode(text)
		wantIDs, errWant := original.Tokenizer.Encode(text)
		if errGot != nil || errWant != nil || !reflect.DeepEqual(got, wantIDs) {
			t.Errorf("the run's tokenizer encodes %q as %v (%v), the pretrained one as %v (%v)", text, got, errGot, wantIDs, errWant)
		}
		if op.Step != 2 || op.Origin != "fine-tuned from "+original.Origin || op.Model.Config.Context != original.Model.Config.Context {
			t.Errorf("opened step %d, origin %q, context %d", op.Step, op.Origin, op.Model.Config.Context)
		}
		if op.Run == nil || !reflect.DeepEqual(*op.Run, lastCheckpoint(t, dir).Config) {
			t.Errorf("opened with the run config %+v, not the checkpoint's", op.Run)
		}
		name := initfrom.CopyName(cfg.Init.Tokenizer[0])
		writeText(t, filepath.Join(dir, name), "{}")
		if _, err := open.Open(dir, open.Options{}); err == nil || !strings.Contains(err.Error(), name+": not the copy of") {
			t.Errorf("a changed %s: %v", name, err)
		}
	})
}
