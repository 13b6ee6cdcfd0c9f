package analysis

import (
	"fmt"
	"maps"
	"math"
	"testing"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/model"
)

// TestAttributionMLPsAreWhatTheStreamGained: each MLP's part, which direct
// logit attribution reads from mlp_out, equals what it was before mlp_out
// was named, worked out by subtraction: what the block added to the stream
// (resid_post − resid_pre) less what its attention added (attn_out, after
// any ln1_post) and less ln2_post's bias, through the readout at each
// position's divisor, mean over the scored positions (1e-4, a float32
// graph). For every full-block and norm-placement config, biases and norm
// shifts off zero.
func TestAttributionMLPsAreWhatTheStreamGained(t *testing.T) {
	task, err := data.New(data.TaskConfig{Name: "copy", Length: 5, Symbols: 7})
	if err != nil {
		t.Fatal(err)
	}
	configs := fullBlockConfigs(task.Vocab(), task.SeqLen())
	maps.Copy(configs, normsBlockConfigs(task.Vocab(), task.SeqLen()))
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			m := normsModel(t, cfg)
			names := Circuit(m)
			for l := range cfg.Layers {
				names = append(names, model.AttnOut(l))
			}
			c, err := RunWithCache(m, examples(t, task, 16, 2), names...)
			if err != nil {
				t.Fatal(err)
			}
			a, err := DirectLogitAttribution(c)
			if err != nil {
				t.Fatal(err)
			}
			want := mlpsBySubtraction(t, c)
			for l := range cfg.Layers {
				if math.Abs(a.MLPs[l]-want[l]) > 1e-4*(1+math.Abs(want[l])) {
					t.Errorf("layer %d's MLP adds %v read from mlp_out, %v by subtraction", l, a.MLPs[l], want[l])
				}
			}
		})
	}
}

// mlpsBySubtraction is each layer's MLP part as direct logit attribution
// worked it out before mlp_out was named.
func mlpsBySubtraction(t *testing.T, c *Cache) []float64 {
	t.Helper()
	m, b := c.Model, c.Batch
	head, err := newReadout(m)
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) Tensor {
		x, err := c.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	final := get(model.ResidPost(m.Config.Layers - 1))
	out := make([]float64, m.Config.Layers)
	positions := 0
	for row, keep := range b.Mask {
		if keep == 0 {
			continue
		}
		positions++
		g := head.gradient(b.Targets[row], head.divisor(final.Block(row)))
		for l := range out {
			pre, post, attn := get(model.ResidPre(l)).Block(row), get(model.ResidPost(l)).Block(row), get(model.AttnOut(l)).Block(row)
			out[l] += kernels.Dot(g, post) - kernels.Dot(g, pre) - kernels.Dot(g, attn)
			if bias := m.Param(fmt.Sprintf("blocks.%d.ln2_post.bias", l)); bias != nil {
				b2, err := model.Float64s(bias)
				if err != nil {
					t.Fatal(err)
				}
				out[l] -= kernels.Dot(g, b2)
			}
		}
	}
	for l := range out {
		out[l] /= float64(positions)
	}
	return out
}
