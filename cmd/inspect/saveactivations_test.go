package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/tooltest"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
)

// numpyReader is docs/transformerlens.md's Python that reads a file of
// activations with numpy alone (no safetensors package), on the file
// named by its first argument, then printing its metadata and every
// tensor's name, dtype, shape and values, flat, as JSON.
func numpyReader(t *testing.T) string {
	t.Helper()
	doc := string(readAll(t, filepath.Join("..", "..", "docs", "transformerlens.md")))
	for _, block := range strings.Split(doc, "```python\n")[1:] {
		code, _, _ := strings.Cut(block, "```")
		if strings.Contains(code, "np.frombuffer") {
			code = strings.Replace(code, `open("acts.safetensors", "rb")`, "open(sys.argv[1], \"rb\")", 1)
			return "import sys\n" + code + `print(json.dumps({"names": list(header), "meta": meta, "tokens": tokens, "labels": labels,
    "acts": {k: {"dtype": str(a.dtype), "shape": list(a.shape), "values": a.reshape(-1).tolist()} for k, a in acts.items()}}))
`
		}
	}
	t.Fatal("docs/transformerlens.md shows no numpy reader (a python block calling np.frombuffer)")
	return ""
}

// savedFile is what numpyReader prints.
type savedFile struct {
	Names  []string
	Meta   map[string]string
	Tokens [][]int
	Labels [][]string
	Acts   map[string]struct {
		Dtype  string
		Shape  []int
		Values []float64
	}
}

// TestSaveActivationsReadByNumpy: -save-activations on a Hugging Face
// Llama (BF16 weights, computed in float32) writes the activations asked
// by TransformerLens's names, a glob of them, the lab's name and the
// logits, in the order asked, under the names asked, as float32; numpy
// alone reads each in TransformerLens's shape, batch first, holding
// exactly what a graph of the test's own (a TapeMachine) computes, laid
// out by hand here (the heads' outputs from (B, H, T, d) to (B, T, H, d));
// the metadata holds the tokens and their labels. The Python is
// docs/transformerlens.md's, run as the page shows it.
func TestSaveActivationsReadByNumpy(t *testing.T) {
	python := tooltest.Numpy(t)
	dir := filepath.Join("..", "..", "open", "hf", "testdata", "biased")
	path := filepath.Join(t.TempDir(), "acts.safetensors")
	out := string(runNoted(t, dir, "-tokens", archTokens, "-examples", "1", "-color", "never",
		"-save-activations", path, "-activations", "blocks.*.hook_resid_post, blocks.0.attn.hook_z,blocks.1.attn.weights,logits"))
	if !strings.Contains(out, "wrote "+path) {
		t.Errorf("the output does not say where the file went:\n%s", out)
	}
	printed, err := exec.Command(python, "-c", numpyReader(t), path).Output()
	if err != nil {
		t.Fatalf("numpy could not read the file: %v", err)
	}
	var got savedFile
	if err := json.Unmarshal(printed, &got); err != nil {
		t.Fatal(err)
	}
	names := []string{"blocks.0.hook_resid_post", "blocks.1.hook_resid_post", "blocks.0.attn.hook_z", "blocks.1.attn.weights", "logits"}
	if !slices.Equal(got.Names, names) {
		t.Fatalf("the file holds %v, want %v", got.Names, names)
	}
	tokens, labels := [][]int{{10, 11, 12, 10, 11, 12}}, [][]string{{"<10>", "<11>", "<12>", "<10>", "<11>", "<12>"}}
	if fmt.Sprint(got.Tokens) != fmt.Sprint(tokens) || fmt.Sprint(got.Labels) != fmt.Sprint(labels) {
		t.Errorf("metadata tokens %v, labels %v; want %v and %v", got.Tokens, got.Labels, tokens, labels)
	}
	graph, cfg := graphActivations(t, dir, []int{10, 11, 12, 10, 11, 12}, "blocks.0.resid_post", "blocks.1.resid_post", "blocks.0.attn.head_out", "blocks.1.attn.weights", "logits")
	T, H, d := 6, cfg.Heads, cfg.DHead()
	z := make([]float64, len(graph["blocks.0.attn.head_out"])) // (B, H, T, d) to (B, T, H, d), B = 1
	for h := range H {
		for p := range T {
			copy(z[(p*H+h)*d:][:d], graph["blocks.0.attn.head_out"][(h*T+p)*d:][:d])
		}
	}
	want := map[string]struct {
		shape  []int
		values []float64
	}{
		"blocks.0.hook_resid_post": {[]int{1, T, cfg.DModel}, graph["blocks.0.resid_post"]},
		"blocks.1.hook_resid_post": {[]int{1, T, cfg.DModel}, graph["blocks.1.resid_post"]},
		"blocks.0.attn.hook_z":     {[]int{1, T, H, d}, z},
		"blocks.1.attn.weights":    {[]int{1, H, T, T}, graph["blocks.1.attn.weights"]},
		"logits":                   {[]int{1, T, cfg.Vocab}, graph["logits"]},
	}
	for name, w := range want {
		a := got.Acts[name]
		if a.Dtype != "float32" || !slices.Equal(a.Shape, w.shape) {
			t.Errorf("%s: %s %v, want float32 %v", name, a.Dtype, a.Shape, w.shape)
			continue
		}
		if fmt.Sprint(a.Values) != fmt.Sprint(w.values) {
			t.Errorf("%s: numpy reads %v, the graph computes %v", name, a.Values, w.values)
		}
	}
}

// graphActivations are the named activations of one TapeMachine run of the
// model at dir on tokens (batch 1), as float64 in the graph's layout, from
// a graph of the test's own, and the model's config.
func graphActivations(t *testing.T, dir string, tokens []int, names ...string) (map[string][]float64, model.Config) {
	t.Helper()
	op, err := open.Open(dir, open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := model.Build(op.Model, model.BuildOptions{Batch: 1, SeqLen: len(tokens), Cache: names})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Feed(tokens, make([]int, len(tokens)), make([]float64, len(tokens))); err != nil {
		t.Fatal(err)
	}
	vm := g.NewMachine()
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	out := map[string][]float64{}
	for _, name := range names {
		v, err := g.Activation(name)
		if err != nil {
			t.Fatal(err)
		}
		if out[name], err = model.Float64s(v); err != nil {
			t.Fatal(err)
		}
	}
	return out, op.Model.Config
}

// TestSaveActivationsRefusals: what -save-activations cannot do is refused
// in one line, before the work, and writes nothing: no -activations, or
// -activations alone; a file not named .safetensors; an empty name; a
// name the model does not have (the names it has listed); the model's own
// file, a directory or a symlink as the output (the output rule).
func TestSaveActivationsRefusals(t *testing.T) {
	tmp := t.TempDir()
	ckpt := filepath.Join(tmp, "copy.safetensors")
	if err := os.WriteFile(ckpt, readAll(t, testCheckpoint), 0o644); err != nil {
		t.Fatal(err)
	}
	dirOut, link := filepath.Join(tmp, "dir.safetensors"), filepath.Join(tmp, "link.safetensors")
	if err := os.Mkdir(dirOut, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(tmp, "elsewhere"), link); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "acts.safetensors")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-save-activations", out}, "-save-activations needs -activations NAMES"},
		{[]string{"-activations", "logits"}, "add -save-activations FILE.safetensors"},
		{[]string{"-save-activations", filepath.Join(tmp, "acts.npy"), "-activations", "logits"}, "give a file name ending in .safetensors"},
		{[]string{"-save-activations", out, "-activations", "logits,,blocks.0.resid_pre"}, "holds an empty name"},
		{[]string{"-save-activations", out, "-activations", "blocks.0.attn.hook_nothing"}, `-activations: no activation "blocks.0.attn.hook_nothing": the graph has tok_emb`},
		{[]string{"-save-activations", out, "-activations", "blocks.9.*"}, `no activation "blocks.9.*"`},
		{[]string{"-save-activations", ckpt, "-activations", "logits"}, "refusing to write " + ckpt + ": it is the input"},
		{[]string{"-save-activations", dirOut, "-activations", "logits"}, "not a regular file"},
		{[]string{"-save-activations", link, "-activations", "logits"}, "not a regular file"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(append([]string{ckpt, "-color", "never"}, c.args...), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line containing %q", c.args, err, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%q wrote %s", c.args, out)
		}
	}
}

// TestSaveActivationsReplacesWhole: a file already at the path is replaced
// by the complete new one, and nothing else is left in its directory (no
// temporary file).
func TestSaveActivationsReplacesWhole(t *testing.T) {
	tmp := t.TempDir()
	path := filepath.Join(tmp, "acts.safetensors")
	if err := os.WriteFile(path, []byte("an older file"), 0o644); err != nil {
		t.Fatal(err)
	}
	runOK(t, testCheckpoint, "-tokens", "3 1 4", "-color", "never", "-save-activations", path, "-activations", "blocks.0.hook_resid_pre")
	data := readAll(t, path)
	if bytes.Contains(data, []byte("older")) || !bytes.Contains(data, []byte(`"blocks.0.hook_resid_pre":{"dtype":"F32","shape":[1,3,`)) {
		t.Errorf("the file was not replaced by the activations: %.200q", data)
	}
	if entries, err := os.ReadDir(tmp); err != nil || len(entries) != 1 {
		t.Errorf("the directory holds %d entries (%v), want the file alone", len(entries), err)
	}
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
