package analysis

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/model"
)

// namesModel is a small full-block model of dtype with 2 layers of 2
// heads, and a batch of 2 rows of 4 positions.
func namesModel(t *testing.T, dtype tensor.Dtype) (*model.Model, *data.Batch) {
	t.Helper()
	m, err := model.New(model.Config{Vocab: 9, Context: 4, DModel: 8, Heads: 2, Layers: 2, MLP: true, DFF: 16}, dtype, 5)
	if err != nil {
		t.Fatal(err)
	}
	return m, &data.Batch{Size: 2, SeqLen: 4, Tokens: []int{1, 2, 3, 4, 5, 6, 7, 8}, Targets: make([]int, 8), Mask: make([]float64, 8)}
}

// TestCacheTakesTransformerLensNames: a cache kept by TransformerLens's
// names and globs answers to either name of each activation; a glob of
// several, a name the graph does not have and one the run did not keep
// are refused; TL gives the heads' outputs (B, H, T, d) as
// TransformerLens's hook_z (B, T, H, d), laid out by hand here.
func TestCacheTakesTransformerLensNames(t *testing.T) {
	m, b := namesModel(t, tensor.Float32)
	c, err := RunWithCache(m, b, "blocks.*.hook_resid_post", "blocks.0.attn.hook_z")
	if err != nil {
		t.Fatal(err)
	}
	for lab, tl := range map[string]string{"blocks.1.resid_post": "blocks.1.hook_resid_post", "blocks.0.attn.head_out": "blocks.0.attn.hook_z"} {
		x, err1 := c.Get(lab)
		y, err2 := c.Get(tl)
		if err1 != nil || err2 != nil || fmt.Sprint(x.Float64s()) != fmt.Sprint(y.Float64s()) {
			t.Errorf("%s and %s read differently (%v, %v)", lab, tl, err1, err2)
		}
	}
	for name, want := range map[string]string{
		"blocks.*.hook_resid_post": "names 2 activations",
		"blocks.0.hook_nothing":    "the graph has tok_emb",
		"blocks.0.hook_resid_pre":  "the run kept no activation blocks.0.resid_pre",
	} {
		if _, err := c.Get(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Get(%q): %v, want an error saying %q", name, err, want)
		}
	}
	z, err := c.Get(model.HeadOut(0))
	if err != nil {
		t.Fatal(err)
	}
	tl, err := c.TL("blocks.0.attn.hook_z")
	if err != nil {
		t.Fatal(err)
	}
	B, H, T, d := 2, 2, 4, 4
	if !slices.Equal(tl.Shape, []int{B, T, H, d}) {
		t.Fatalf("hook_z's TransformerLens shape is %v, want %v", tl.Shape, []int{B, T, H, d})
	}
	for i := range B {
		for p := range T {
			for h := range H {
				if got, want := tl.Block(i, p, h), z.Block(i, h, p); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("hook_z[%d, %d, %d] is %v, head_out[%d, %d, %d] %v", i, p, h, got, i, h, p, want)
				}
			}
		}
	}
}

// TestSaveNames: names are saved as asked; a glob's matches under the form
// it matched (TransformerLens's for "blocks.*.hook_resid_post", the lab's
// for "blocks.*.attn.weights", TransformerLens's where it matches both);
// each activation once per name, in the order asked; a name or glob that
// names nothing is refused with the names there are.
func TestSaveNames(t *testing.T) {
	m, _ := namesModel(t, tensor.Float32)
	got, err := SaveNames(m.Config, []string{"logits", "blocks.*.hook_resid_post", "blocks.*.attn.weights", "blocks.1.resid_post", "blocks.1.*"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Saved{{"logits", "logits"},
		{"blocks.0.hook_resid_post", "blocks.0.resid_post"}, {"blocks.1.hook_resid_post", "blocks.1.resid_post"},
		{"blocks.0.attn.weights", "blocks.0.attn.weights"}, {"blocks.1.attn.weights", "blocks.1.attn.weights"},
		{"blocks.1.resid_post", "blocks.1.resid_post"}}
	if !slices.Equal(got[:len(want)], want) {
		t.Errorf("SaveNames gave %v, want it to start %v", got[:len(want)], want)
	}
	for _, s := range got[len(want):] { // blocks.1.*: every activation of block 1, TransformerLens's name
		if !strings.HasPrefix(s.File, "blocks.1.") || !strings.Contains(s.File, "hook_") {
			t.Errorf("blocks.1.* saved %s as %s, want TransformerLens's name", s.Lab, s.File)
		}
	}
	if n := len(got) - len(want); n < 10 {
		t.Errorf("blocks.1.* named %d activations", n)
	}
	if _, err := SaveNames(m.Config, []string{"blocks.2.*"}); err == nil || !strings.Contains(err.Error(), "the graph has") {
		t.Errorf("a glob naming nothing: %v", err)
	}
}

// TestWriteActivationsOfAFloat64Model: a float64 model's activations are
// written as F64 in TransformerLens's shapes, holding Cache.TL's values,
// with the batch's tokens and the labels given in the metadata; read back
// through package safetensors, and the header's first bytes as numpy
// reads them (its length, little-endian, then JSON).
func TestWriteActivationsOfAFloat64Model(t *testing.T) {
	m, b := namesModel(t, tensor.Float64)
	saved, err := SaveNames(m.Config, []string{"blocks.0.attn.hook_pattern", "blocks.1.mlp_out"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := RunWithCache(m, b, saved[0].Lab, saved[1].Lab)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	labels := map[string][][]string{"labels": {{"a", "b", "c", "d"}, {"e", "f", "g", "h"}}}
	if err := WriteActivations(&buf, c, saved, labels); err != nil {
		t.Fatal(err)
	}
	if n := binary.LittleEndian.Uint64(buf.Bytes()); n == 0 || n%8 != 0 || buf.Bytes()[8] != '{' {
		t.Errorf("the header's length %d or start %q is not what numpy's reader expects", n, buf.Bytes()[8])
	}
	tensors, meta, err := safetensors.Read(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if meta["tokens"] != "[[1,2,3,4],[5,6,7,8]]" || meta["labels"] != `[["a","b","c","d"],["e","f","g","h"]]` {
		t.Errorf("metadata %v", meta)
	}
	shapes := map[string][]int{"blocks.0.attn.hook_pattern": {2, 2, 4, 4}, "blocks.1.mlp_out": {2, 4, 8}}
	for i, st := range tensors {
		if st.Name != saved[i].File || st.DType != safetensors.F64 || !slices.Equal(st.Shape, shapes[st.Name]) {
			t.Errorf("tensor %d: %s %s %v, want %s F64 %v", i, st.Name, st.DType, st.Shape, saved[i].File, shapes[saved[i].File])
			continue
		}
		want, err := c.TL(saved[i].Lab)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range want.Float64s() {
			if got := math.Float64frombits(binary.LittleEndian.Uint64(st.Data[8*k:])); got != v {
				t.Fatalf("%s[%d] is %v in the file, %v in the cache", st.Name, k, got, v)
			}
		}
	}
}
