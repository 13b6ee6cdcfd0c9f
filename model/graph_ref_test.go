package model

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// refForward is a plain-Go float64 forward pass of m written from the README's
// formulas ("The model, exactly"), one position and one head at a time. keyMask (B*T) may be nil;
// dropMasks, when non-nil, holds one (B, H, T, T) mask per layer that
// multiplies the attention weights before they are applied to the values.
// It returns logits (B*T, V), attention [layer] (B, H, T, T) flattened (before
// dropout) and the masked mean cross-entropy.
func refForward(m *Model, b, tt int, tokens, targets []int, lossMask, keyMask []float64, dropMasks [][]float64) (logits []float64, attention [][]float64, loss float64) {
	cfg := m.Config
	d, h := cfg.DModel, cfg.Heads
	dh := d / h
	p := func(name string) []float64 {
		t := m.Param(name)
		if t == nil {
			return nil
		}
		return f64(t)
	}
	n := b * tt
	x := make([]float64, n*d)
	tok, pos := p("tok_emb.weight"), p("pos_emb.weight")
	for r := 0; r < n; r++ {
		for c := 0; c < d; c++ {
			x[r*d+c] = refEmbedScale(cfg)*tok[tokens[r]*d+c] + pos[(r%tt)*d+c]
		}
	}
	for l := 0; l < cfg.Layers; l++ {
		pre := fmt.Sprintf("blocks.%d.", l)
		in := x
		if cfg.MLP {
			in = refNorm(cfg, x, p(pre+"ln1.weight"), p(pre+"ln1.bias"))
		}
		qkv := refLinear(in, d, p(pre+"attn.qkv.weight"), p(pre+"attn.qkv.bias"))
		if cfg.QKNorm {
			for r := 0; r < n; r++ {
				for hi := 0; hi < h; hi++ {
					graphtest.RMSNorm(qkv[r*3*d+hi*dh:][:dh], p(pre+"attn.q_norm.weight"), cfg.Eps())
					graphtest.RMSNorm(qkv[r*3*d+d+hi*dh:][:dh], p(pre+"attn.k_norm.weight"), cfg.Eps())
				}
			}
		}
		concat := make([]float64, n*d)
		weights := make([]float64, b*h*tt*tt)
		for bi := 0; bi < b; bi++ {
			for hi := 0; hi < h; hi++ {
				at := func(t, which, c int) float64 { return qkv[(bi*tt+t)*3*d+which*d+hi*dh+c] }
				for i := 0; i < tt; i++ {
					s := make([]float64, tt)
					maxv := math.Inf(-1)
					ok := func(j int) bool { return j <= i && (keyMask == nil || keyMask[bi*tt+j] != 0) }
					for j := 0; j <= i; j++ {
						for c := 0; c < dh; c++ {
							s[j] += at(i, 0, c) * at(j, 1, c)
						}
						s[j] = refScore(cfg, s[j])
						if ok(j) {
							maxv = math.Max(maxv, s[j])
						}
					}
					var sum float64
					for j := 0; j < tt; j++ {
						if ok(j) {
							sum += math.Exp(s[j] - maxv)
						}
					}
					for j := 0; j < tt; j++ {
						if !ok(j) {
							continue
						}
						w := math.Exp(s[j]-maxv) / sum
						weights[((bi*h+hi)*tt+i)*tt+j] = w
						if dropMasks != nil {
							w *= dropMasks[l][((bi*h+hi)*tt+i)*tt+j]
						}
						for c := 0; c < dh; c++ {
							concat[(bi*tt+i)*d+hi*dh+c] += w * at(j, 2, c)
						}
					}
				}
			}
		}
		attention = append(attention, weights)
		x = add(x, refLinear(concat, d, p(pre+"attn.out.weight"), p(pre+"attn.out.bias")))
		if cfg.MLP {
			x = add(x, refMLP(cfg, p, pre, refNorm(cfg, x, p(pre+"ln2.weight"), p(pre+"ln2.bias"))))
		}
	}
	if cfg.MLP {
		x = refNorm(cfg, x, p("ln_f.weight"), p("ln_f.bias"))
	}
	head := p("lm_head.weight")
	if cfg.TieEmbeddings {
		head = tok
	}
	logits = refCapLogits(cfg, refLinear(x, d, head, p("lm_head.bias")))
	v := cfg.Vocab
	var count float64
	for r := 0; r < n; r++ {
		row := logits[r*v : (r+1)*v]
		maxv := math.Inf(-1)
		for _, z := range row {
			maxv = math.Max(maxv, z)
		}
		var sum float64
		for _, z := range row {
			sum += math.Exp(z - maxv)
		}
		loss += lossMask[r] * (maxv + math.Log(sum) - row[targets[r]])
		count += lossMask[r]
	}
	return logits, attention, loss / count
}

func f64(t *tensor.Dense) []float64 {
	out := make([]float64, t.Shape().TotalSize())
	for i := range out {
		out[i] = at(t, i)
	}
	return out
}

// refLinear is x W^T + b for x (rows, in) with W (out, in); b may be nil.
func refLinear(x []float64, in int, w, b []float64) []float64 {
	rows, out := len(x)/in, len(w)/in
	y := make([]float64, rows*out)
	for r := 0; r < rows; r++ {
		for o := 0; o < out; o++ {
			var s float64
			if b != nil {
				s = b[o]
			}
			for i := 0; i < in; i++ {
				s += x[r*in+i] * w[o*in+i]
			}
			y[r*out+o] = s
		}
	}
	return y
}

// refNorm is the config's norm of each row of x (rows, D) at its epsilon:
// a LayerNorm with the biased variance, plus b unless nil, or an RMSNorm,
// x / sqrt(mean(x^2) + eps) * w.
func refNorm(cfg Config, x []float64, w, b []float64) []float64 {
	return graphtest.Norm(x, w, b, cfg.Eps(), cfg.NormKind() == NormRMS)
}

func add(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] + b[i]
	}
	return out
}
