package model

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/layers"

	"gorgonia.org/tensor"
)

// The fixtures in testdata/pytorch come from an independent PyTorch module
// (testdata/pytorch/gen_fixtures.py, float64, autograd), regenerated with
//
//	/usr/bin/python3 model/testdata/pytorch/gen_fixtures.py

// torchFixture is one case written by gen_fixtures.py.
type torchFixture struct {
	Name    string                 `json:"name"`
	Config  Config                 `json:"config"`
	Batch   int                    `json:"batch"`
	SeqLen  int                    `json:"seq_len"`
	Weights map[string]torchTensor `json:"weights"`
	Tokens  [][]int                `json:"tokens"`
	Targets [][]int                `json:"targets"`
	Mask    [][]float64            `json:"loss_mask"`
	Logits  [][]float64            `json:"logits"`    // (B*T, V)
	Attn    [][][][][]float64      `json:"attention"` // [layer][b][h][q][k]
	Loss    float64                `json:"loss"`
	Grads   map[string][]float64   `json:"grads"`
}

type torchTensor struct {
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

var torchFixtures = []string{"attn_only", "mlp_2layer", "rope_gqa", "alibi_mqa_window", "sinusoidal", "mla_none",
	"llama_style", "nanogpt_style", "relu2_tied_bias", "gemma_norms", "olmo2_norms", "neox_parallel",
	"gemma2_scores", "gptneo_unscaled"}

func loadTorchFixture(t *testing.T, name string) *torchFixture {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "pytorch", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f torchFixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := f.Config.Validate(); err != nil {
		t.Fatalf("%s: fixture config: %v", name, err)
	}
	return &f
}

// torchModel builds a Model from the fixture's weights in ParamSpecs order,
// failing if the PyTorch module's names or shapes differ from the specs: the
// checkpoint naming contract is that a PyTorch module loads our tensors as is.
func torchModel(t *testing.T, f *torchFixture, dtype tensor.Dtype) *Model {
	t.Helper()
	specs := f.Config.ParamSpecs()
	if len(specs) != len(f.Weights) {
		names := make([]string, 0, len(f.Weights))
		for n := range f.Weights {
			names = append(names, n)
		}
		t.Fatalf("%s: PyTorch has %d tensors %v, ParamSpecs has %d", f.Name, len(f.Weights), names, len(specs))
	}
	m := &Model{Config: f.Config, Dtype: dtype}
	for _, spec := range specs {
		w, ok := f.Weights[spec.Name]
		if !ok {
			t.Fatalf("%s: ParamSpecs names %q, the PyTorch module has no such tensor", f.Name, spec.Name)
		}
		if !reflect.DeepEqual(w.Shape, spec.Shape) {
			t.Fatalf("%s: %s: PyTorch shape %v, ParamSpecs shape %v", f.Name, spec.Name, w.Shape, spec.Shape)
		}
		if len(w.Data) != product(w.Shape) {
			t.Fatalf("%s: %s: %d values for shape %v", f.Name, spec.Name, len(w.Data), w.Shape)
		}
		m.Params = append(m.Params, Param{Name: spec.Name, Value: newDense(dtype, spec.Shape, append([]float64(nil), w.Data...))})
	}
	return m
}

func TestTorchFixturesMatchParamSpecs(t *testing.T) {
	for _, name := range torchFixtures {
		f := loadTorchFixture(t, name)
		torchModel(t, f, tensor.Float64)
		if len(f.Grads) != len(f.Weights) {
			t.Errorf("%s: %d gradients for %d weights", name, len(f.Grads), len(f.Weights))
		}
	}
}

// TestBuildMatchesPyTorch runs the training graph on the fixture's weights and
// batch and compares logits, attention weights, loss and gradients with
// PyTorch's float64 results.
func TestBuildMatchesPyTorch(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		type tolerance struct {
			out  float64 // |got - want| for logits, attention, loss
			grad float64 // |got - want| <= grad * (1 + |want|)
		}
		dtypes := []struct {
			dtype tensor.Dtype
			tol   tolerance
		}{
			{tensor.Float64, tolerance{out: 1e-5, grad: 1e-6}},
			// float32 rounding of weights and activations: ~1e-7 relative per op.
			{tensor.Float32, tolerance{out: 1e-4, grad: 1e-4}},
		}
		for _, name := range torchFixtures {
			f := loadTorchFixture(t, name)
			for _, dt := range dtypes {
				t.Run(fmt.Sprintf("%s/%v", name, dt.dtype), func(t *testing.T) {
					checkAgainstTorch(t, f, path, dt.dtype, dt.tol.out, dt.tol.grad)
				})
			}
		}
	})
}

func checkAgainstTorch(t *testing.T, f *torchFixture, path layers.Path, dtype tensor.Dtype, outTol, gradTol float64) {
	m := torchModel(t, f, dtype)
	m.Config.Attention = string(path)
	B, T, V, H := f.Batch, f.SeqLen, f.Config.Vocab, f.Config.Heads
	g, err := Build(m, BuildOptions{Batch: B, SeqLen: T, Train: true})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	var tokens, targets []int
	var mask []float64
	for b := 0; b < B; b++ {
		tokens = append(tokens, f.Tokens[b]...)
		targets = append(targets, f.Targets[b]...)
		mask = append(mask, f.Mask[b]...)
	}
	if err := g.Feed(tokens, targets, mask); err != nil {
		t.Fatalf("Feed: %v", err)
	}
	vm := g.NewMachine()
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatalf("RunAll: %v", err)
	}

	var wantLogits []float64
	for _, row := range f.Logits {
		wantLogits = append(wantLogits, row...)
	}
	compareAbs(t, "logits", []int{B * T, V}, valueData(t, "logits", g.Logits.Value()), g.Logits.Shape(), wantLogits, outTol)

	if len(attentionNodes(g)) != f.Config.Layers {
		t.Fatalf("%d attention nodes for %d layers", len(attentionNodes(g)), f.Config.Layers)
	}
	for l, node := range attentionNodes(g) {
		var want []float64
		for b := range f.Attn[l] {
			for h := range f.Attn[l][b] {
				for q := range f.Attn[l][b][h] {
					want = append(want, f.Attn[l][b][h][q]...)
				}
			}
		}
		label := fmt.Sprintf("attention[%d]", l)
		compareAbs(t, label, []int{B, H, T, T}, valueData(t, label, node.Value()), node.Shape(), want, outTol)
	}

	loss := valueData(t, "loss", g.Loss.Value())
	if len(loss) != 1 {
		t.Fatalf("loss has %d values, want a scalar", len(loss))
	}
	if d := math.Abs(loss[0] - f.Loss); !(d < outTol) {
		t.Errorf("loss = %.12g, PyTorch %.12g (|diff| %.3g > %.0e)", loss[0], f.Loss, d, outTol)
	}
	t.Logf("loss |diff| = %.3g", math.Abs(loss[0]-f.Loss))

	grads, err := g.Gradients()
	if err != nil {
		t.Fatalf("Gradients: %v", err)
	}
	if len(grads) != len(m.Params) {
		t.Fatalf("%d gradients for %d params", len(grads), len(m.Params))
	}
	worst, worstName := 0.0, ""
	for i, p := range m.Params {
		got := valueData(t, p.Name, grads[i])
		want := f.Grads[p.Name]
		if !grads[i].Shape().Eq(p.Value.Shape()) {
			t.Errorf("grad %s: shape %v, param shape %v", p.Name, grads[i].Shape(), p.Value.Shape())
			continue
		}
		if len(got) != len(want) {
			t.Errorf("grad %s: %d values, PyTorch %d", p.Name, len(got), len(want))
			continue
		}
		bad := 0
		for j := range want {
			d := math.Abs(got[j] - want[j])
			if r := d / (1 + math.Abs(want[j])); r > worst {
				worst, worstName = r, fmt.Sprintf("%s[%d]", p.Name, j)
			}
			if !(d <= gradTol*(1+math.Abs(want[j]))) {
				if bad < 5 {
					t.Errorf("grad %s[%d] (shape %v) = %.10g, PyTorch %.10g", p.Name, j, p.Value.Shape(), got[j], want[j])
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("grad %s: %d of %d entries differ beyond %.0e*(1+|want|)", p.Name, bad, len(want), gradTol)
		}
	}
	t.Logf("gradients: worst |diff|/(1+|want|) = %.3g at %s", worst, worstName)
}

// compareAbs checks got against want entry by entry with an absolute
// tolerance, naming the first few differing entries by their index.
func compareAbs(t *testing.T, label string, wantShape []int, got []float64, gotShape tensor.Shape, want []float64, tol float64) {
	t.Helper()
	if !reflect.DeepEqual([]int(gotShape), wantShape) {
		t.Errorf("%s: shape %v, want %v", label, gotShape, wantShape)
		return
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d values, PyTorch %d", label, len(got), len(want))
		return
	}
	worst, bad := 0.0, 0
	for i := range want {
		d := math.Abs(got[i] - want[i])
		if d > worst || math.IsNaN(d) {
			worst = d
		}
		if !(d < tol) {
			if bad < 5 {
				t.Errorf("%s%v = %.10g, PyTorch %.10g", label, unravel(i, wantShape), got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d entries differ by >= %.0e", label, bad, len(want), tol)
	}
	t.Logf("%s: max |diff| = %.3g", label, worst)
}

// unravel turns a flat row-major index into coordinates.
func unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for k := len(shape) - 1; k >= 0; k-- {
		idx[k] = i % shape[k]
		i /= shape[k]
	}
	return idx
}

// valueData returns a node value's elements as float64, row-major.
func valueData(t *testing.T, label string, v interface{ Data() interface{} }) []float64 {
	t.Helper()
	if v == nil || reflect.ValueOf(v).IsNil() {
		t.Fatalf("%s: no value", label)
	}
	if d, ok := v.(*tensor.Dense); ok && d.IsMaterializable() {
		v = d.Materialize().(*tensor.Dense) // a strided view: read it in logical order
	}
	return slices.Clone(graphtest.Float64s(t, label, v))
}
