package hf_test

import (
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/layers"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/hf"
)

// tlReference is a fixture's NAME.activations.json (gen_activations.py):
// TransformerLens's activations of a batch of token rows, by its hook
// names, in its shapes, from a float64 forward written by hand on the
// values the files store. A null is -Inf (the masked scores).
type tlReference struct {
	Tokens      [][]int `json:"tokens"`
	Activations map[string]struct {
		Shape []int      `json:"shape"`
		Data  []*float64 `json:"data"`
	} `json:"activations"`
}

// widened is m's weights in a float64 model, so that the Go forward is
// held to the float64 reference at float64's precision.
func widened(t *testing.T, m *model.Model) *model.Model {
	t.Helper()
	out := &model.Model{Config: m.Config, Dtype: tensor.Float64}
	for _, p := range m.Params {
		v, err := model.Float64s(p.Value)
		if err != nil {
			t.Fatal(err)
		}
		out.Params = append(out.Params, model.Param{Name: p.Name, Value: tensor.New(tensor.WithShape(p.Value.Shape().Clone()...), tensor.WithBacking(v))})
	}
	return out
}

// TestActivationsMatchTransformerLens: GPT-2's (prefixed) and Llama's
// (llama: grouped-query heads, rotary positions, RMSNorm, SwiGLU)
// directories, widened to float64, asked for every activation by
// TransformerLens's name on each path, give each one in TransformerLens's
// shape (ActivationSpec.ToTL) equal to the hand-written PyTorch reference
// within 1e-8 of its largest |value| (the reference is rounded to 10
// digits), -Inf where it masks a score.
func TestActivationsMatchTransformerLens(t *testing.T) {
	for _, variant := range []string{"prefixed", "llama"} {
		var ref tlReference
		if err := json.Unmarshal(readFile(t, filepath.Join("testdata", variant+".activations.json")), &ref); err != nil {
			t.Fatal(err)
		}
		m := widened(t, load(t, filepath.Join("testdata", variant), hf.Options{}).Model)
		names := make([]string, 0, len(ref.Activations))
		for name := range ref.Activations {
			names = append(names, name)
		}
		slices.Sort(names)
		b, tt := len(ref.Tokens), len(ref.Tokens[0])
		for _, path := range layers.Paths {
			t.Run(variant+"/"+string(path), func(t *testing.T) {
				onPath := *m
				onPath.Config.Attention = string(path)
				g, err := model.Build(&onPath, model.BuildOptions{Batch: b, SeqLen: tt, Cache: names})
				if err != nil {
					t.Fatal(err)
				}
				if len(g.Opts.Cache) != len(g.ActivationNames()) {
					t.Errorf("the reference names %d activations, the graph has %d: %v", len(g.Opts.Cache), len(g.ActivationNames()), g.ActivationNames())
				}
				tokens := slices.Concat(ref.Tokens...)
				if err := g.Feed(tokens, tokens, make([]float64, len(tokens))); err != nil {
					t.Fatal(err)
				}
				vm := g.NewMachine()
				defer vm.Close()
				if err := vm.RunAll(); err != nil {
					t.Fatal(err)
				}
				for _, name := range names {
					want := ref.Activations[name]
					got := tlValue(t, g, name)
					if !slices.Equal(got.Shape(), tensor.Shape(want.Shape)) {
						t.Errorf("%s: shape %v, TransformerLens's %v", name, got.Shape(), want.Shape)
						continue
					}
					sameValues(t, name, got.Float64s(), want.Data, 1e-8)
				}
			})
		}
	}
}

// tlValue is g's activation name in TransformerLens's layout.
func tlValue(t *testing.T, g *model.Graph, name string) *tensor.Dense {
	t.Helper()
	v, err := g.Activation(name)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := g.ActivationSpec(name)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := spec.ToTL(v)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// sameValues fails unless got equals want within tol of want's largest
// |value| (at least 1), a nil in want being -Inf.
func sameValues(t *testing.T, what string, got []float64, want []*float64, tol float64) {
	t.Helper()
	scale := 1.0
	for _, w := range want {
		if w != nil {
			scale = math.Max(scale, math.Abs(*w))
		}
	}
	for i, w := range want {
		switch {
		case w == nil && !math.IsInf(got[i], -1):
			t.Errorf("%s: value %d is %v, want -Inf", what, i, got[i])
			return
		case w != nil && !(math.Abs(got[i]-*w) <= tol*scale):
			t.Errorf("%s: value %d is %v, want %v (tolerance %g of %.3g)", what, i, got[i], *w, tol, scale)
			return
		}
	}
}

// TestMappedActivations: a BF16 fixture (qwen3_bf16: QK-norm, grouped
// heads) opened with Map, its matrices read in place by the fused path,
// gives every activation ("*") bit for bit as the same directory read
// into float32, each head's result included (its W_out widened into the
// graph for it).
func TestMappedActivations(t *testing.T) {
	dir := filepath.Join("testdata", "qwen3_bf16")
	copied := load(t, dir, hf.Options{}).Model
	m := load(t, dir, hf.Options{Map: true}).Model
	defer m.Close()
	if !m.HasStored() {
		t.Fatal("nothing mapped")
	}
	tokens := readReference(t, "qwen3_bf16").Tokens[:5]
	run := func(m *model.Model) *model.Graph {
		g, err := model.Build(m, model.BuildOptions{Batch: 1, SeqLen: len(tokens), Cache: []string{"*"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Feed(tokens, tokens, make([]float64, len(tokens))); err != nil {
			t.Fatal(err)
		}
		vm := g.NewMachine()
		defer vm.Close()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		return g
	}
	want, got := run(copied), run(m)
	for _, name := range want.ActivationNames() {
		w, err := want.Activation(name)
		if err != nil {
			t.Fatal(err)
		}
		g, err := got.Activation(name)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(g.Float32s(), w.Float32s()) {
			t.Errorf("%s differs mapped and read", name)
		}
	}
}
