package model

// The model once more, as plain float64 loops in the style of llama2.c's
// run.c: one token at a time, every step of every variant Config allows
// written out where it happens. Read it top to bottom; layers/gorgonia.go
// is the same model as a Gorgonia graph. It shares no code with Build or
// Decoder: the tests hold both of them to it (TestReferenceIsTheOracle),
// so it is the definition the fast paths are checked against, not an
// example. Nothing here is fast, and nothing trains: no dropout.

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
)

// Reference decodes one sequence with a KV cache, in float64.
type Reference struct {
	cfg Config
	w   map[string][]float64 // every parameter by its checkpoint name (float32 ones read exactly)
	// cache[l][t] is what layer l keeps of position t: its keys then its
	// values (G·d each, after QK-norm and rotary), or with latent
	// attention its latent (r values), from which they are up-projected.
	cache [][][]float64
}

// NewReference reads m's weights into a reference decoder with an empty
// cache: a weight kept in its file's dtype (BF16, F16) widened exactly
// (Param).
func NewReference(m *Model) (*Reference, error) {
	r := &Reference{cfg: m.Config, w: map[string][]float64{}, cache: make([][][]float64, m.Config.Layers)}
	for _, p := range m.Params {
		values, err := Float64s(m.Param(p.Name))
		if err != nil {
			return nil, errors.Wrapf(err, "reference: %s", p.Name)
		}
		r.w[p.Name] = values
	}
	return r, nil
}

// Len is the number of positions written to the cache.
func (r *Reference) Len() int { return len(r.cache[0]) }

// Step is run.c's forward: it feeds token (in [0, Vocab)) at position
// Len() (below Context with learned positions), writes its keys and values
// to the cache and returns the logits of the next token (V).
func (r *Reference) Step(token int) []float64 {
	c, pos, D := r.cfg, r.Len(), r.cfg.DModel
	x := append([]float64(nil), r.w["tok_emb.weight"][token*D:(token+1)*D]...) // the token's embedding
	// Gemma's sqrt(D), on this copy: a tied head reads the table unscaled.
	if c.EmbedScale > 0 {
		for i := range x {
			x[i] *= c.EmbedScale
		}
	}
	switch c.PositionKind() {
	case PositionLearned:
		addTo(x, r.w["pos_emb.weight"][pos*D:(pos+1)*D])
	case PositionSinusoidal: // channel 2i: sin(pos / 10000^(2i/D)), 2i+1: its cos
		for i := 0; i < D/2; i++ {
			angle := float64(pos) / math.Pow(10000, float64(2*i)/float64(D))
			x[2*i] += math.Sin(angle)
			x[2*i+1] += math.Cos(angle)
		}
	} // rope and alibi act inside the attention; none has no positions
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("blocks.%d.", l)
		if !c.MLP { // attention-only block: x = x + attn(x)
			addTo(x, r.attention(l, pos, p, x))
			continue
		}
		attn := func(in []float64) []float64 { return r.attention(l, pos, p, in) }
		mlp := func(in []float64) []float64 { return r.feedForward(p+"mlp.", in) }
		if c.ParallelResidual { // GPT-NeoX: x = x + (mlp(ln2(x)) + attn(ln1(x))), both of the block's input
			both := mlp(r.norm(x, p+"ln2"))
			addTo(both, attn(r.norm(x, p+"ln1")))
			addTo(x, both)
			continue
		}
		addTo(x, r.sublayer(x, p+"ln1", attn)) // x = x + attn through its norms
		addTo(x, r.sublayer(x, p+"ln2", mlp))  // x = x + mlp through its norms
	}
	if c.MLP {
		x = r.norm(x, "ln_f")
	}
	head := "lm_head.weight"
	if c.TieEmbeddings {
		head = "tok_emb.weight" // the unembedding is the embedding
	}
	logits := matVec(r.w[head], r.w["lm_head.bias"], x) // (V)
	if c.FinalSoftcap > 0 {
		for i, z := range logits {
			logits[i] = softcap(z, c.FinalSoftcap)
		}
	}
	return logits
}

// sublayer is f (a block's attention or MLP) of x through the norms the
// placement gives it, ln before and ln_post after: f(ln(x)) pre-norm,
// ln_post(f(ln(x))) sandwich, ln_post(f(x)) post-norm.
func (r *Reference) sublayer(x []float64, ln string, f func([]float64) []float64) []float64 {
	placement := r.cfg.PlacementKind()
	if placement != PlacementPost {
		x = r.norm(x, ln)
	}
	y := f(x)
	if placement != PlacementPre {
		y = r.norm(y, ln+"_post")
	}
	return y
}

// attention is layer l's self-attention of position pos, x its input (D):
// H query heads of d channels, G key and value heads, each serving H/G
// query heads.
func (r *Reference) attention(l, pos int, p string, x []float64) []float64 {
	c := r.cfg
	H, G, d := c.Heads, c.KVHeadCount(), c.DHead()
	// Project: q (H·d), and what the cache keeps of this position.
	var q []float64
	if c.KVLatent > 0 {
		q = r.linear(p+"attn.q", x)
		r.cache[l] = append(r.cache[l], r.linear(p+"attn.kv_down", x)) // the latent (r), no bias
	} else {
		qkv := r.linear(p+"attn.qkv", x) // [q (H·d) | k (G·d) | v (G·d)]
		q = qkv[:H*d]
		if c.QKNorm && c.QKScope() == QKScopeAll { // OLMo 2: one RMSNorm over all of q, one over all of k
			copy(q, normalize(q, r.scale(p+"attn.q_norm.weight"), nil, c.Eps(), false))
			copy(qkv[H*d:], normalize(qkv[H*d:H*d+G*d], r.scale(p+"attn.k_norm.weight"), nil, c.Eps(), false))
		}
		r.headwise(l, p, q, "q_norm.weight", pos)
		r.headwise(l, p, qkv[H*d:H*d+G*d], "k_norm.weight", pos)
		r.cache[l] = append(r.cache[l], qkv[H*d:]) // k | v
	}
	keys, values := r.keysValues(p, r.cache[l]) // per position (G·d) each
	first := 0                                  // the first position this one sees
	if w := r.window(l); w > 0 {
		first = max(0, pos-w+1)
	}
	scale := 1 / math.Sqrt(float64(d)) // the scores' factor: attn_scale, or 1/sqrt(d)
	if c.AttnScale > 0 {
		scale = c.AttnScale
	}
	out := make([]float64, H*d) // the heads' outputs side by side
	for h := 0; h < H; h++ {
		g := h / (H / G) // the key and value head query head h reads
		qh := q[h*d : (h+1)*d]
		scores := make([]float64, pos+1-first) // keys first..pos; every other key is masked: weight 0
		for j := first; j <= pos; j++ {
			s := dot(qh, keys[j][g*d:(g+1)*d]) * scale
			if c.AttnSoftcap > 0 {
				s = softcap(s, c.AttnSoftcap)
			}
			if c.PositionKind() == PositionALiBi {
				s -= alibiSlope(h, H) * float64(pos-j)
			}
			scores[j-first] = s
		}
		softmax(scores)
		for j := first; j <= pos; j++ {
			for i := 0; i < d; i++ {
				out[h*d+i] += scores[j-first] * values[j][g*d+i]
			}
		}
	}
	return r.linear(p+"attn.out", out) // (D)
}

// headwise applies to each head of v (q or k of the new position, d
// channels a head), in place, QK-norm (an RMSNorm with the layer's weight
// norm) when the model has it per head, then layer l's rotary turn of
// position pos.
func (r *Reference) headwise(l int, p string, v []float64, norm string, pos int) {
	d := r.cfg.DHead()
	for h := 0; h < len(v)/d; h++ {
		head := v[h*d : (h+1)*d]
		if r.cfg.QKNorm && r.cfg.QKScope() == QKScopeHead {
			copy(head, normalize(head, r.scale(p+"attn."+norm), nil, r.cfg.Eps(), false))
		}
		if r.cfg.PositionKind() == PositionRope {
			rotate(head, pos, r.rotaryFrequencies(l))
		}
	}
}

// keysValues are every cached position's keys and values: the cache's rows
// split in two, or with latent attention each latent's up-projection
// [k | v] = latent W_kv_upᵀ + b.
func (r *Reference) keysValues(p string, cache [][]float64) (keys, values [][]float64) {
	for _, row := range cache {
		if r.cfg.KVLatent > 0 {
			row = r.linear(p+"attn.kv_up", row)
		}
		keys, values = append(keys, row[:len(row)/2]), append(values, row[len(row)/2:])
	}
	return keys, values
}

// feedForward is the block's MLP on x: proj(act(fc x)), SwiGLU's
// down(silu(gate x) · up x) or GeGLU's down(gelu_tanh(gate x) · up x).
func (r *Reference) feedForward(p string, x []float64) []float64 {
	if r.cfg.Gated() {
		gate, up := r.linear(p+"gate", x), r.linear(p+"up", x)
		for i, z := range gate {
			if r.cfg.ActivationKind() == ActivationGeGLU {
				gate[i] = 0.5 * z * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(z+0.044715*z*z*z))) * up[i]
				continue
			}
			gate[i] = z / (1 + math.Exp(-z)) * up[i] // silu(z) = z·sigmoid(z)
		}
		return r.linear(p+"down", gate)
	}
	h := r.linear(p+"fc", x)
	for i, z := range h {
		switch r.cfg.ActivationKind() {
		case ActivationGELUTanh: // GPT-2's
			h[i] = 0.5 * z * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(z+0.044715*z*z*z)))
		case ActivationGELU: // exact
			h[i] = 0.5 * z * (1 + math.Erf(z/math.Sqrt2))
		case ActivationReLU2:
			h[i] = max(z, 0) * max(z, 0)
		}
	}
	return r.linear(p+"proj", h)
}

// norm is the config's norm called name (ln1, ln2, their _post norms,
// ln_f) of x.
func (r *Reference) norm(x []float64, name string) []float64 {
	return normalize(x, r.scale(name+".weight"), r.w[name+".bias"], r.cfg.Eps(), r.cfg.NormKind() == NormLayer)
}

// scale is what a norm's weight (by its name) multiplies the normalised x
// by: the weight w, or with norm_offset 1 + w (Gemma's RMSNorm, which
// stores w - 1).
func (r *Reference) scale(name string) []float64 {
	w := r.w[name]
	if !r.cfg.NormOffset {
		return w
	}
	s := make([]float64, len(w))
	for i, v := range w {
		s[i] = 1 + v
	}
	return s
}

// normalize is a LayerNorm when centred, (x - mean) / sqrt(var + eps) · w
// + b with the biased variance, else an RMSNorm, x / sqrt(mean(x²) + eps)
// · w (+ b). b may be nil.
func normalize(x, w, b []float64, eps float64, centred bool) []float64 {
	n := float64(len(x))
	var mean, sq float64
	if centred {
		for _, v := range x {
			mean += v / n
		}
	}
	for _, v := range x {
		sq += (v - mean) * (v - mean) / n
	}
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = (v - mean) / math.Sqrt(sq+eps) * w[i]
		if b != nil {
			y[i] += b[i]
		}
	}
	return y
}

// rotate turns x (one head) by the angles pos·freqs[i] on the pairs (i,
// i+R/2) of its first R = 2·len(freqs) channels; the rest stay.
func rotate(x []float64, pos int, freqs []float64) {
	half := len(freqs)
	for i, f := range freqs {
		sin, cos := math.Sincos(float64(pos) * f)
		x1, x2 := x[i], x[i+half]
		x[i], x[i+half] = x1*cos-x2*sin, x2*cos+x1*sin
	}
}

// alibiSlope is head h's ALiBi slope of Press et al., with n the largest
// power of two <= H: 2^(-8(h+1)/n) for the first n heads, then every
// other slope of 2n heads, 2^(-8(2(h-n)+1)/2n).
func alibiSlope(h, heads int) float64 {
	n := 1
	for 2*n <= heads {
		n *= 2
	}
	if h < n {
		return math.Pow(2, -8*float64(h+1)/float64(n))
	}
	return math.Pow(2, -8*float64(2*(h-n)+1)/float64(2*n))
}

// softcap is Gemma 2's cap·tanh(x/cap).
func softcap(x, cap float64) float64 { return cap * math.Tanh(x/cap) }

// softmax turns x into exp(x - max) / sum, in place.
func softmax(x []float64) {
	top, sum := math.Inf(-1), 0.0
	for _, v := range x {
		top = math.Max(top, v)
	}
	for i, v := range x {
		x[i] = math.Exp(v - top)
		sum += x[i]
	}
	for i := range x {
		x[i] /= sum
	}
}

// linear is y = W x + b of the weight name.weight (out, in), in PyTorch's
// layout, and its bias name.bias when the model has one.
func (r *Reference) linear(name string, x []float64) []float64 {
	return matVec(r.w[name+".weight"], r.w[name+".bias"], x)
}

// matVec is W x + b for W (out, len(x)) row-major; b may be nil.
func matVec(w, b, x []float64) []float64 {
	y := make([]float64, len(w)/len(x))
	for o := range y {
		y[o] = dot(w[o*len(x):(o+1)*len(x)], x)
		if b != nil {
			y[o] += b[o]
		}
	}
	return y
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// addTo adds y to x in place.
func addTo(x, y []float64) {
	for i := range x {
		x[i] += y[i]
	}
}
