package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/attnscope/attnscope/internal/msg/msgtest"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
)

// TestOutputsNeverInputs (issue 42, case 2): no output flag writes over a
// file the model is read from, or may be read from: a Hugging Face
// directory's weights, a shard its index names, config.json, a tokenizer
// file it does not have yet (it would be read next time); a nanoGPT
// ckpt.pt (the model opened by its out_dir) and meta.pkl. Each is one line
// naming the flag and the path, and the file is byte-identical after; a
// new file in the model's directory stays allowed.
func TestOutputsNeverInputs(t *testing.T) {
	single := opentest.GPT2Dir(t, model.Config{Context: 16, DModel: 8, Heads: 2, Layers: 1, DFF: 16})
	sharded := shardedCopy(t, single)
	outDir := nanoGPTOutDir(t)
	for _, c := range []struct{ name, model, flag, path string }{
		{"the weights", single, "-html", "model.safetensors"},
		{"the weights, -png", single, "-png", "model.safetensors"},
		{"the weights, -dot", single, "-dot", "model.safetensors"},
		{"config.json", single, "-html", "config.json"},
		{"a tokenizer.json the model lacks", single, "-html", "tokenizer.json"},
		{"a generation_config.json the model lacks", single, "-dot", "generation_config.json"},
		{"a shard", sharded, "-html", "model-00001-of-00001.safetensors"},
		{"the index", sharded, "-dot", "model.safetensors.index.json"},
		{"ckpt.pt of the out_dir opened", outDir, "-html", "ckpt.pt"},
		{"meta.pkl", outDir, "-png", "meta.pkl"},
		{"meta.pkl, -dot", outDir, "-dot", "meta.pkl"},
	} {
		target := filepath.Join(c.model, c.path)
		before, statErr := os.ReadFile(target)
		args := []string{c.model, c.flag, target}
		if c.flag == "-png" {
			args = append(args, "-examples", "1")
		}
		var stdout, stderr bytes.Buffer
		err := run(args, &stdout, &stderr)
		if msgtest.Refusal(t, c.name, err, c.flag+": refusing to write "+target+": it is ") && stdout.Len() > 0 {
			t.Errorf("%s: wrote %q before refusing", c.name, stdout.String())
		}
		after, afterErr := os.ReadFile(target)
		switch {
		case statErr != nil && afterErr == nil:
			t.Errorf("%s: %s was created", c.name, target)
		case statErr == nil && !bytes.Equal(before, after):
			t.Errorf("%s: %s changed (%v)", c.name, target, afterErr)
		}
	}
	// The text a model's windows are read from (-data) is an input too.
	ck, text, _ := textCheckpoint(t, "abcdefgh")
	before, err := os.ReadFile(text)
	if err != nil {
		t.Fatal(err)
	}
	err = run([]string{ck, "-data", text, "-html", text}, &bytes.Buffer{}, &bytes.Buffer{})
	msgtest.Refusal(t, "the -data text", err, "-html: refusing to write "+text+": it is the input "+text)
	if after, err := os.ReadFile(text); err != nil || !bytes.Equal(before, after) {
		t.Errorf("the -data text changed (%v)", err)
	}
	// Another spelling and a hard link of ckpt.pt are the same file.
	link := filepath.Join(t.TempDir(), "heads.png")
	if err := os.Link(filepath.Join(outDir, "ckpt.pt"), link); err != nil {
		t.Fatal(err)
	}
	err = run([]string{filepath.Join(outDir, "ckpt.pt"), "-png", link}, &bytes.Buffer{}, &bytes.Buffer{})
	msgtest.Refusal(t, "a hard link of ckpt.pt", err, "-png: refusing to write "+link+": it is the input ")
	heads := filepath.Join(outDir, "heads.png")
	if err := run([]string{outDir, "-png", heads, "-examples", "1"}, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Errorf("a new file in the model's directory: %v", err)
	}
}

// shardedCopy is the Hugging Face directory dir with its weights as one
// shard that model.safetensors.index.json names.
func shardedCopy(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	for _, name := range []string{"config.json", "model.safetensors"} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "model.safetensors" {
			name = "model-00001-of-00001.safetensors"
		}
		if err := os.WriteFile(filepath.Join(out, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := safetensors.Open(filepath.Join(out, "model-00001-of-00001.safetensors"), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	placed := map[string]string{}
	for _, in := range f.Tensors() {
		placed[in.Name] = "model-00001-of-00001.safetensors"
	}
	index, err := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": placed})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "model.safetensors.index.json"), index, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// nanoGPTOutDir is a nanoGPT out_dir: the committed character model's
// ckpt.pt with its meta.pkl beside it.
func nanoGPTOutDir(t *testing.T) string {
	t.Helper()
	out := t.TempDir()
	nano := filepath.Join("..", "..", "open", "nanogpt", "testdata")
	for src, name := range map[string]string{filepath.Join(nano, "bias", "ckpt.pt"): "ckpt.pt", filepath.Join(nano, "meta.pkl"): "meta.pkl"} {
		raw, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
