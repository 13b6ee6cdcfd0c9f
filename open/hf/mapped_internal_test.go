package hf

import (
	"testing"

	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/model"
)

// TestStoredAsRuns: a matrix is kept mapped only when its tensors are its
// rows one after another as they lie; a tensor that also fills another
// parameter's rows (Phi-3's gate_up_proj) or stored transposed, or one
// dtype beside another, is read into float32.
func TestStoredAsRuns(t *testing.T) {
	spec := model.ParamSpec{Name: "blocks.0.mlp.gate.weight", Shape: []int{4, 3}}
	src := func(n, first int, dtype string, transpose bool) *source {
		return &source{info: safetensors.Info{DType: dtype, Shape: []int{n, 3}}, target: target{transpose: transpose, part: rows{first: first, count: n}}}
	}
	for _, c := range []struct {
		name  string
		parts []*source
		want  bool
	}{
		{"whole", []*source{src(4, 0, safetensors.BF16, false)}, true},
		{"two runs", []*source{src(1, 0, safetensors.BF16, false), src(3, 1, safetensors.BF16, false)}, true},
		{"a tensor of more rows (gate and up in one)", []*source{src(8, 0, safetensors.BF16, false)}, false},
		{"a gap", []*source{src(1, 0, safetensors.BF16, false), src(2, 2, safetensors.BF16, false)}, false},
		{"transposed", []*source{src(4, 0, safetensors.BF16, true)}, false},
		{"two dtypes", []*source{src(1, 0, safetensors.BF16, false), src(3, 1, safetensors.F16, false)}, false},
	} {
		if got := storedAsRuns(spec, c.parts); got != c.want {
			t.Errorf("%s: storedAsRuns = %t, want %t", c.name, got, c.want)
		}
	}
}
