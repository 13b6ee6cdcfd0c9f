package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/golden"
	"github.com/attnscope/attnscope/internal/msg/msgtest"
)

// TestGraphGolden pins -graph for the test checkpoint (two attention-only
// layers, D 16, H 2, context 8) on both paths: every op node in execution
// order with its name, op, shape and parameters, and the totals.
func TestGraphGolden(t *testing.T) {
	for _, path := range []string{"fused", "gorgonia"} {
		t.Run(path, func(t *testing.T) {
			out := runOK(t, "-checkpoint", testCheckpoint, "-graph", "-path", path)
			golden.Check(t, "graph_"+path+".txt", out)
		})
	}
}

// TestGraphTrainCounts: -graph -training-graph shows the training graph of the run's
// batch; Gorgonia's Grad adds the gradient nodes after the forward ones, and
// every parameter is counted once. The fused path is this project's ops but
// for the gradient accumulation, the gorgonia path Gorgonia's but for the
// masked softmax and cross-entropy and their gradients.
func TestGraphTrainCounts(t *testing.T) {
	for _, c := range []struct{ path, totals string }{
		{"fused", "op nodes: 53 (Gorgonia's own 5, attnscope's 48, marked *); input nodes: 13; parameters: 2,496"},
		{"gorgonia", "op nodes: 87 (Gorgonia's own 81, attnscope's 6, marked *); input nodes: 13; parameters: 2,496"},
	} {
		out := string(runOK(t, "-checkpoint", testCheckpoint, "-graph", "-training-graph", "-path", c.path))
		if !strings.Contains(out, "batch 32, length 8: training graph") || !strings.HasSuffix(out, c.totals+"\n") {
			t.Errorf("-path %s -graph -training-graph:\n%s\nwant batch 32 and the totals %q", c.path, out, c.totals)
		}
	}
}

// TestDot: -dot writes Gorgonia's DOT of the graph, naming the nodes; it
// refuses to write over the checkpoint and leaves it intact.
func TestDot(t *testing.T) {
	dir := t.TempDir()
	dot := filepath.Join(dir, "graph.dot")
	out := runOK(t, "-checkpoint", testCheckpoint, "-dot", dot, "-path", "gorgonia")
	if string(out) != "wrote "+dot+"\n" {
		t.Errorf("stdout %q, want only the file written", out)
	}
	b, err := os.ReadFile(dot)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"digraph", "blocks.0.attn.scores", "blocks.0.attn.weights", "tok_emb"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("DOT file lacks %q", want)
		}
	}
	ck := filepath.Join(dir, "copy.safetensors")
	orig, err := os.ReadFile(testCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ck, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err = run([]string{"-checkpoint", ck, "-dot", ck}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "-dot: refusing to write "+ck+": it is the input "+ck) {
		t.Errorf("-dot onto the checkpoint: error %v, want a refusal", err)
	}
	if after, _ := os.ReadFile(ck); !bytes.Equal(after, orig) || stdout.Len() > 0 {
		t.Error("the refused -dot changed the checkpoint or printed something")
	}
}

// TestPathFlagErrors: a bad -path, and -training-graph without -graph or -dot, are
// one-line errors.
func TestPathFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-path", "native"}, `-path "native": want fused or gorgonia`},
		{[]string{"-path", "native", "-graph"}, `-path "native": want fused or gorgonia`},
		{[]string{"-training-graph"}, "-training-graph needs -graph or -dot"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(append([]string{"-checkpoint", testCheckpoint}, c.args...), &stdout, &stderr)
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: error %v, want %q", c.args, err, c.want)
		}
		if stdout.Len() > 0 {
			t.Errorf("%q printed %q", c.args, stdout.String())
		}
	}
}

// TestTrainingGraphOfModelTrainedElsewhere: -training-graph of a model
// trained elsewhere, which has no run and so no batch to build a training
// graph of, is refused in one line naming the model, its kind and
// init_from (it drew a batch of 32, a default run's, that no run used),
// before its weights are read, and nothing is printed; its forward graph
// still shows.
func TestTrainingGraphOfModelTrainedElsewhere(t *testing.T) {
	unread := t.TempDir() // a config.json alone: reading it, or weights, would fail otherwise
	writeFile(t, filepath.Join(unread, "config.json"), "not json")
	models := map[string]string{
		unread: "a Hugging Face model directory",
		filepath.Join("..", "..", "open", "hf", "testdata", "llama"):                "a Hugging Face model directory",
		filepath.Join("..", "..", "open", "nanogpt", "testdata", "bias", "ckpt.pt"): "a nanoGPT checkpoint",
	}
	for path, kind := range models {
		var stdout, stderr bytes.Buffer
		err := run([]string{path, "-graph", "-training-graph"}, &stdout, &stderr)
		if msgtest.Refusal(t, path, err, "-training-graph: "+path+" is "+kind+", a model trained elsewhere", "init_from") && stdout.Len()+stderr.Len() > 0 {
			t.Errorf("%s: stdout %q, stderr %q, want both empty", path, stdout.String(), stderr.String())
		}
		if path == unread {
			continue
		}
		if out := string(runOK(t, path, "-graph")); !strings.Contains(out, "batch 1") {
			t.Errorf("%s -graph: %q, want its forward graph of batch 1", path, out)
		}
	}
}
