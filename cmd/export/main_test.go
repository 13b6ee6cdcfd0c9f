package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/initfrom"
	"github.com/attnscope/attnscope/internal/msg/msgtest"
	"github.com/attnscope/attnscope/internal/tooltest"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/open/hf"
	"github.com/attnscope/attnscope/open/opentest"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/tokenizer"
	"github.com/attnscope/attnscope/train"
)

func runCmd(args ...string) (string, string, error) {
	var stdout, stderr bytes.Buffer
	err := run(args, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// gpt2Shaped is a small model of GPT-2's block.
var gpt2Shaped = model.Config{Vocab: 11, Context: 12, DModel: 16, Heads: 4, Layers: 2, MLP: true, DFF: 24, QKVBias: true, OutBias: true}

// labCheckpoint writes a lab checkpoint (step 7, the repeat task) of a model
// of config cfg with random weights of std 0.4 (20 times New's), so that
// logits lie far from 0 and a wrong formula or layout shows, as a lone
// checkpoint file in a directory of its own.
func labCheckpoint(t *testing.T, cfg model.Config) (string, *model.Model) {
	t.Helper()
	m, err := model.New(cfg, tensor.Float32, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Params {
		for i := range p.Value.Float32s() {
			p.Value.Float32s()[i] *= 20
		}
	}
	run := rundir.DefaultConfig()
	run.Task, run.Model = data.TaskConfig{Name: "repeat", Length: cfg.Context, Symbols: cfg.Vocab}, cfg
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := checkpoint.Save(path, m, run, 7); err != nil {
		t.Fatal(err)
	}
	return path, m
}

// TestExportMatchesPyTorchGPT2: a lab GPT-2 exported is read by an
// independent PyTorch GPT-2 (testdata/gpt2_forward.py: transformers'
// config keys and defaults, GPT2LMHeadModel's tensor names and Conv1D
// (in, out) layouts, every tensor present and no other), whose logits equal
// the lab's forward on the same tokens within 1e-5 of the largest logit
// (Go runs float32, PyTorch float64 of the same float32 weights): with
// GPT-2's tanh GELU and its own LM head, and with the exact GELU and a
// tied head. The directory opens back in the lab bit for bit, and a toy
// task's export says it writes no tokenizer.
func TestExportMatchesPyTorchGPT2(t *testing.T) {
	python := tooltest.Torch(t)
	tied := gpt2Shaped
	tied.Activation, tied.TieEmbeddings, tied.NormEps = model.ActivationGELU, true, 1e-3
	for name, cfg := range map[string]model.Config{"gelu_tanh-untied": gpt2Shaped, "gelu-tied": tied} {
		t.Run(name, func(t *testing.T) {
			ckpt, m := labCheckpoint(t, cfg)
			out := filepath.Join(t.TempDir(), "hf")
			stdout, stderr, err := runCmd(ckpt, "-out", out)
			if err != nil {
				t.Fatal(err)
			}
			want := "wrote " + out + ": config.json, model.safetensors (GPT2LMHeadModel: 2 layers, 4 heads, d_model 16, vocab 11, context 12; step 7)\n"
			if stdout != want || !strings.Contains(stderr, "has no tokenizer: its tokens are the task's ids 0 to 10") {
				t.Errorf("stdout %q, stderr %q; want %q and the note that no tokenizer is written", stdout, stderr, want)
			}
			tokens := []int{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 10, 0}
			batch := &data.Batch{Size: 1, SeqLen: len(tokens), Tokens: tokens, Targets: tokens, Mask: make([]float64, len(tokens))}
			lab := opentest.Logits(t, m, batch)
			toks, _ := json.Marshal(tokens)
			raw, err := exec.Command(python, filepath.Join("testdata", "gpt2_forward.py"), out, string(toks)).Output()
			if err != nil {
				t.Fatalf("gpt2_forward.py: %v %s", err, stderrOf(err))
			}
			var got struct{ Logits [][]float64 }
			if err := json.Unmarshal(raw, &got); err != nil || len(got.Logits)*cfg.Vocab != len(lab) {
				t.Fatalf("gpt2_forward.py printed %.200q (%v); want %d positions of %d logits", raw, err, len(tokens), cfg.Vocab)
			}
			worst, scale := 0.0, 1.0
			for i, row := range got.Logits {
				for v, x := range row {
					worst = math.Max(worst, math.Abs(x-lab[i*cfg.Vocab+v]))
					scale = math.Max(scale, math.Abs(lab[i*cfg.Vocab+v]))
				}
			}
			if worst > 1e-5*scale {
				t.Errorf("PyTorch's GPT-2 logits differ from the lab's by up to %.3g (largest logit %.3g; tolerance 1e-5 of it)", worst, scale)
			}
			back, err := open.Open(out, open.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if again := opentest.Logits(t, back.Model, batch); !slices.Equal(again, lab) {
				t.Errorf("the export opened in the lab gives other logits")
			}
		})
	}
}

// stderrOf is the stderr an exec.ExitError carries.
func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}

// TestExportRefuses: a model that is not a GPT-2 is refused on one line
// naming every key that differs, from the checkpoint's header, and so is a
// model trained elsewhere; an output that is not a new or empty directory,
// or that is an input, is refused before the model is read. Nothing is
// written and nothing is printed on stdout.
func TestExportRefuses(t *testing.T) {
	llama := gpt2Shaped
	llama.Position, llama.Norm, llama.Activation, llama.MLPBias, llama.KVHeads = model.PositionRope, model.NormRMS, model.ActivationSwiGLU, model.FlagOff, 2
	llamaCkpt, _ := labCheckpoint(t, llama)
	window := gpt2Shaped
	window.Window = 4
	windowCkpt, _ := labCheckpoint(t, window)
	gpt2Ckpt, _ := labCheckpoint(t, gpt2Shaped)
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "kept.txt"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := opentest.TinyGPT2Dir(t, 4, opentest.DNAFiles)
	fresh := func() string { return filepath.Join(t.TempDir(), "hf") }
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"llama-shaped", []string{llamaCkpt, "-out", fresh()}, []string{llamaCkpt + " is not a GPT-2: model.position = rope (GPT-2's positions are learned)",
			"model.norm = rmsnorm", "model.activation = swiglu", "model.mlp_bias = false", "model.kv_heads = 2 of 4 heads (grouped heads"}},
		{"a window", []string{windowCkpt, "-out", fresh()}, []string{"is not a GPT-2: model.window = 4 (GPT-2 attends to every earlier token)"}},
		{"the committed induction run", []string{opentest.FromRoot(t, opentest.InductionDir), "-out", fresh()}, []string{"model.mlp = false (attention-only blocks"}},
		{"a model trained elsewhere", []string{foreign, "-out", fresh()}, []string{"is a model trained elsewhere (Hugging Face GPT2LMHeadModel); export writes the lab's own models"}},
		{"a directory with a file", []string{gpt2Ckpt, "-out", full}, []string{"refusing to write " + full + ": it is a directory that is not empty (it holds kept.txt)"}},
		{"the checkpoint", []string{gpt2Ckpt, "-out", gpt2Ckpt}, []string{"refusing to write " + gpt2Ckpt + ": it is a regular file, not a directory"}},
		{"the model's own directory", []string{foreign, "-out", foreign}, []string{"refusing to write " + foreign + ": it is a directory that is not empty"}},
		{"no -out", []string{gpt2Ckpt}, []string{"no -out DIR"}},
		{"no model", []string{"-out", fresh()}, []string{"no model: give one"}},
	} {
		out := c.args[len(c.args)-1]
		stdout, _, err := runCmd(c.args...)
		msgtest.Refusal(t, c.name, err, c.want...)
		if stdout != "" {
			t.Errorf("%s: printed %q", c.name, stdout)
		}
		if _, err := os.Stat(out); out != full && out != gpt2Ckpt && out != foreign && err == nil {
			t.Errorf("%s: wrote %s", c.name, out)
		}
	}
	if entries, _ := os.ReadDir(full); len(entries) != 1 {
		t.Errorf("%s holds %d files after the refusal, want kept.txt alone", full, len(entries))
	}
}

// TestExportIntoEmptyDir: an empty directory is filled, and the config
// names no special ids for a model without a tokenizer (GPT2Config's
// default, 50256, lies outside its vocabulary).
func TestExportIntoEmptyDir(t *testing.T) {
	ckpt, _ := labCheckpoint(t, gpt2Shaped)
	out := t.TempDir()
	if _, _, err := runCmd("-checkpoint", ckpt, "-out", out); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(out, hf.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	bos, hasBOS := cfg["bos_token_id"]
	eos, hasEOS := cfg["eos_token_id"]
	if !hasBOS || !hasEOS || bos != nil || eos != nil {
		t.Errorf("config.json: bos_token_id %v (%v), eos_token_id %v (%v); want both null", bos, hasBOS, eos, hasEOS)
	}
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) != 2 {
		t.Errorf("%s holds %d files (%v), want config.json and model.safetensors", out, len(entries), err)
	}
}

// fineTuned trains 2 steps of a run fine-tuning the Hugging Face directory
// pre on DNA text, and returns the run directory.
func fineTuned(t *testing.T, pre string) string {
	t.Helper()
	dir := t.TempDir()
	text, yml, runDir := filepath.Join(dir, "dna.txt"), filepath.Join(dir, "finetune.yaml"), filepath.Join(dir, "run")
	if err := os.WriteFile(text, []byte(strings.Repeat("acgtgcat", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	src := "seed: 3\ninit_from: " + pre + "\ntask: {name: text, path: " + text + ", length: 8}\n" +
		"train: {batch_size: 2, steps: 2, log_every: 0, eval_every: 0, checkpoint_every: 2}\n"
	if err := os.WriteFile(yml, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := rundir.LoadConfigFrom(yml, nil, func(from string) (rundir.Pretrained, error) {
		pre, err := train.OpenPretrained(from, nil)
		if err != nil {
			return rundir.Pretrained{}, err
		}
		return pre.Config(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := train.Run(context.Background(), cfg, train.Options{Dir: runDir}); err != nil {
		t.Fatal(err)
	}
	return runDir
}

// TestExportFineTunedTokenizer: a run that fine-tuned a GPT-2 exports with
// its tokenizer: the run's copies of the pretrained model's vocab.json and
// merges.txt, byte for byte, so the export opens with text read as the
// pretrained model reads it; a copy that is not the one the run recorded is
// refused, nothing written. A lone checkpoint of the run, whose tokenizer
// stayed in the run, exports without one and says so.
func TestExportFineTunedTokenizer(t *testing.T) {
	runDir := fineTuned(t, opentest.TinyGPT2Dir(t, 4, opentest.DNAFiles))
	out := filepath.Join(t.TempDir(), "hf")
	stdout, stderr, err := runCmd(runDir, "-out", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, ": config.json, model.safetensors, vocab.json, merges.txt (GPT2LMHeadModel") || stderr != "" {
		t.Errorf("stdout %q, stderr %q", stdout, stderr)
	}
	for name, want := range opentest.DNAFiles {
		if got, err := os.ReadFile(filepath.Join(out, name)); err != nil || string(got) != want {
			t.Errorf("%s: %q (%v), want the pretrained model's %q", name, got, err, want)
		}
	}
	back, err := open.Open(out, open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := back.Tokenizer.Encode("gatc"); err != nil || !slices.Equal(ids, []int{2, 0, 3, 1}) {
		t.Errorf("the export's tokenizer reads gatc as %v (%v), want [2 0 3 1]", ids, err)
	}

	lone := filepath.Join(t.TempDir(), "lone.safetensors")
	raw, err := os.ReadFile(filepath.Join(runDir, rundir.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lone, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err = runCmd(lone, "-out", filepath.Join(t.TempDir(), "hf"))
	if err != nil || !strings.Contains(stdout, ": config.json, model.safetensors (") ||
		!strings.Contains(stderr, "is a lone checkpoint: its tokenizer is in the run directory that wrote it (init-vocab.json), so none is written") {
		t.Errorf("a lone checkpoint: %v, stdout %q, stderr %q", err, stdout, stderr)
	}

	copied := filepath.Join(runDir, initfrom.CopyName("merges.txt"))
	if err := os.WriteFile(copied, []byte("#version: 0.2\na c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(t.TempDir(), "hf")
	_, _, err = runCmd(runDir, "-out", out)
	msgtest.Refusal(t, "a changed copy", err, "init-merges.txt")
	if _, statErr := os.Stat(out); statErr == nil {
		t.Errorf("a refused export wrote %s", out)
	}
}

// TestExportCharacterModel: a lab text model exports its weights and says
// on stderr that Hugging Face has no tokenizer file for its characters.
func TestExportCharacterModel(t *testing.T) {
	m, err := model.New(gpt2Shaped, tensor.Float32, 3)
	if err != nil {
		t.Fatal(err)
	}
	run := rundir.DefaultConfig()
	run.Task = data.TaskConfig{Name: data.Text, Path: "/data/text.txt", Length: gpt2Shaped.Context, Chars: "\n abcdefghi"}
	run.Model = gpt2Shaped
	ckpt := filepath.Join(t.TempDir(), "text.safetensors")
	if err := checkpoint.Save(ckpt, m, run, 5); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "hf")
	stdout, stderr, err := runCmd(ckpt, "-out", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, ": config.json, model.safetensors (") ||
		!strings.Contains(stderr, "reads characters (11 of them), which Hugging Face has no tokenizer file for; none is written") {
		t.Errorf("stdout %q, stderr %q", stdout, stderr)
	}
}

// TestExportGPT2OwnTokenizer: a run that fine-tuned a GPT-2 without
// tokenizer files (which reads GPT-2's own) exports GPT-2's vocab.json and
// merges.txt, and config.json names <|endoftext|> (50256) as its
// beginning and end of text; the export opens with GPT-2's ids.
func TestExportGPT2OwnTokenizer(t *testing.T) {
	runDir := fineTuned(t, opentest.GPT2Dir(t, model.Config{Context: 16, DModel: 8, Heads: 2, Layers: 1, DFF: 16}))
	out := filepath.Join(t.TempDir(), "hf")
	if _, _, err := runCmd(runDir, "-out", out); err != nil {
		t.Fatal(err)
	}
	vocab, merges := tokenizer.GPT2Files()
	for name, want := range map[string][]byte{"vocab.json": vocab, "merges.txt": merges} {
		if got, err := os.ReadFile(filepath.Join(out, name)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes (%v), want GPT-2's %d", name, len(got), err, len(want))
		}
	}
	raw, err := os.ReadFile(filepath.Join(out, hf.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg["bos_token_id"] != 50256.0 || cfg["eos_token_id"] != 50256.0 {
		t.Errorf("config.json: bos_token_id %v, eos_token_id %v; want 50256", cfg["bos_token_id"], cfg["eos_token_id"])
	}
	back, err := open.Open(out, open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := back.Tokenizer.Encode("Hello, world"); err != nil || !slices.Equal(ids, []int{15496, 11, 995}) {
		t.Errorf("the export's tokenizer reads Hello, world as %v (%v), want GPT-2's [15496 11 995]", ids, err)
	}
}
