package analysis

import (
	"testing"

	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/model"
)

// TestHeadsWithHeadDim: with head_dim apart from d_model/heads the query
// rows of the fused projection are H·d, not D: head h's W_Q is rows
// [h·d, (h+1)·d) of qkv, its W_K and W_V those of its kv head after them,
// its W_O columns [h·d, (h+1)·d) of out (D, H·d).
func TestHeadsWithHeadDim(t *testing.T) {
	cfg := model.Config{Vocab: 11, Context: 8, DModel: 16, Heads: 4, KVHeads: 2, HeadDim: 6, Layers: 1}
	m, err := model.New(cfg, tensor.Float64, 9)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := Heads(m)
	if err != nil {
		t.Fatal(err)
	}
	qkv, _ := model.Float64s(m.Param("blocks.0.attn.qkv.weight"))
	out, _ := model.Float64s(m.Param("blocks.0.attn.out.weight"))
	const d, dm, q = 6, 16, 4 * 6
	for h, head := range hs[0] {
		kv := h / 2
		checks := []struct {
			name string
			got  mat.Matrix
			at   func(i, j int) float64
		}{
			{"W_Q", head.Q, func(i, j int) float64 { return qkv[(h*d+i)*dm+j] }},
			{"W_K", head.K, func(i, j int) float64 { return qkv[(q+kv*d+i)*dm+j] }},
			{"W_V", head.V, func(i, j int) float64 { return qkv[(q+2*d+kv*d+i)*dm+j] }},
			{"W_O", head.O, func(i, j int) float64 { return out[i*q+h*d+j] }},
		}
		for _, c := range checks {
			r, cols := c.got.Dims()
			if r*cols != d*dm {
				t.Fatalf("head %d %s is %d x %d, want %d values", h, c.name, r, cols, d*dm)
			}
			for i := 0; i < r; i++ {
				for j := 0; j < cols; j++ {
					if c.got.At(i, j) != c.at(i, j) {
						t.Fatalf("head %d %s[%d, %d] = %v, want %v", h, c.name, i, j, c.got.At(i, j), c.at(i, j))
					}
				}
			}
		}
	}
}
