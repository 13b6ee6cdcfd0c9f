package ops

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// Decode is the layout of one decoding step's fused projection qkv
// (B, (H+2G)*d): for each row, H query heads, then G key heads, then G
// value heads, d wide each; query head h reads key and value head h/(H/G).
// With rotary positions, R is the number of channels turned (pairs (i,
// i+R/2), as Rotary); 0 reads as d. SoftCap > 0 caps each scaled score s
// at SoftCap·tanh(s/SoftCap), as SoftCap does for a sequence.
type Decode struct {
	H, G, D, R int
	SoftCap    float64
}

func (s Decode) String() string {
	if s.SoftCap > 0 {
		return fmt.Sprintf("H=%d,G=%d,d=%d,r=%d,softcap=%v", s.H, s.G, s.D, s.R, s.SoftCap)
	}
	return fmt.Sprintf("H=%d,G=%d,d=%d,r=%d", s.H, s.G, s.D, s.R)
}

// rotatedHalf is R/2, the rotary pairs of a head.
func (s Decode) rotatedHalf() int {
	if s.R == 0 {
		return s.D / 2
	}
	return s.R / 2
}

// width is the projection's columns, (H+2G)*d.
func (s Decode) width() int { return (s.H + 2*s.G) * s.D }

// CacheAttention is one decoding step's attention on the fused path, from
// the projection of the new position straight to the merged heads:
//
//	qkv           (B, (H+2G)*d)  the new position's projection (Decode)
//	keys, values  (B, G, d, C)   the cache, transposed: column t is
//	                             position t (keys rotated when there are
//	                             rotary positions), so that a row's scores
//	                             and its weighted sum of values are d
//	                             long-vector operations over the slots
//	spans         (2B) Int       row b sees cache slots [spans[2b],
//	                             spans[2b+1]) and itself, at position
//	                             spans[2b+1]
//	cos, sin      (B, d)         each row's rotary angles (each twice, for
//	                             channels i and i+R/2; cos 1 and sin 0 on
//	                             the channels R and beyond), or both nil
//	out           (B, H*d)       softmax(scale * q k^T - slope_h * (i-j)) v,
//	                             heads side by side
//
// q and the new key are turned by the angles first; slopes, one per query
// head when not nil, add ALiBi's bias; with s.SoftCap the scaled scores
// are capped before the softmax. A step costs the slots a row sees,
// not the cache's capacity, and the cache is read in place. The new key
// (turned) and value are also written into slot spans[2b+1] of the cache,
// which must be one: the op reads the column beside it anyway, so the
// write costs nothing, where a copy after the step would wait for memory
// once per channel (the step's GEMVs have streamed the whole model through
// the caches since). Running the op again writes the same values, and
// slots past a row's position are never read. It has no gradient.
func CacheAttention(qkv, keys, values, spans, cos, sin *gorgonia.Node, s Decode, scale float64, slopes []float64) (*gorgonia.Node, error) {
	if math.IsNaN(scale) || math.IsInf(scale, 0) || scale <= 0 {
		return nil, errors.Errorf("cache attention: scale %v must be positive and finite", scale)
	}
	if (cos == nil) != (sin == nil) {
		return nil, errors.New("cache attention: cos and sin come together")
	}
	if s.R < 0 || s.R%2 != 0 || s.R > s.D {
		return nil, errors.Errorf("cache attention: %d rotated channels of a head of %d: want an even number up to d", s.R, s.D)
	}
	if slopes != nil && len(slopes) != s.H {
		return nil, errors.Errorf("cache attention: %d ALiBi slopes for %d heads", len(slopes), s.H)
	}
	d := cacheAttnDef{Decode: s, scale: scale, rotary: cos != nil, slopes: slopes}
	if d.rotary {
		return apply(d, qkv, keys, values, spans, cos, sin) // (B, H*d)
	}
	return apply(d, qkv, keys, values, spans) // (B, H*d)
}

type cacheAttnDef struct {
	Decode
	scale  float64
	rotary bool
	slopes []float64
}

func (d cacheAttnDef) String() string {
	return fmt.Sprintf("CacheAttention{%v,scale=%v,rotary=%t,alibi=%v}", d.Decode, d.scale, d.rotary, d.slopes)
}

func (d cacheAttnDef) signature() signature {
	in := []input{floatIn(2, false), floatIn(4, false), floatIn(4, false), intsIn}
	if d.rotary {
		in = append(in, floatIn(2, false), floatIn(2, false))
	}
	return signature{in: in, out: 2}
}

func (d cacheAttnDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	b, c := s[0][0], s[1][3]
	want := []tensor.Shape{{b, d.width()}, {b, d.G, d.D, c}, {b, d.G, d.D, c}, {2 * b}}
	if d.rotary {
		want = append(want, tensor.Shape{b, d.D}, tensor.Shape{b, d.D})
	}
	for i, w := range want {
		if !s[i].Eq(w) {
			return nil, errors.Errorf("%v: input shapes %v, want %v", d, s, want)
		}
	}
	return tensor.Shape{b, d.H * d.D}, nil
}

func (d cacheAttnDef) run(a *args) error {
	c := a.in[1].Shape()[3]
	for i := 0; i < len(a.ids); i += 2 {
		if lo, hi := a.ids[i], a.ids[i+1]; lo < 0 || lo > hi || hi >= c {
			return errors.Errorf("%v: row %d sees slots [%d, %d) and writes slot %d of a cache of %d", d, i/2, lo, hi, hi, c)
		}
	}
	return byDtype(d, a, cacheAttention[float64], cacheAttention[float32])
}

// turn sets y to x turned by one row's rotary angles (cos, sin of width d)
// on the pairs (i, i+half), copying the channels past 2·half, or copies x
// when cos is nil.
func turn[T float](y, x, cos, sin []T, half int) {
	copy(y, x)
	if cos == nil {
		return
	}
	for i := 0; i < half; i++ {
		x1, x2 := float64(x[i]), float64(x[i+half])
		y[i] = T(x1*float64(cos[i]) - x2*float64(sin[i]))
		y[i+half] = T(x2*float64(cos[i]) + x1*float64(sin[i]))
	}
}

// cacheReadCost is what reading one value of the cache costs, in the
// multiply-adds kernels.ParallelFor weighs work in: a step reads the cache
// from memory, since its GEMVs have streamed the whole model through the
// caches since the last step, and a core waits on so many lines at once.
// With it, one row of stories110M's shape (12 kv heads, 64 slots) is split
// over the cores, which took the op from 0.80 to 0.57 ms a step.
const cacheReadCost = 16

// cacheAttention works per (batch row, kv head), those spread over the
// cores when there is enough work. A query's scores over its n slots are
// the key cache's d rows scaled and added (AddScaledRows), its output the
// value cache's d rows times the weights (a GEMV), and the new position's
// own key and value are added by hand.
func cacheAttention[T float](d cacheAttnDef, a *args) {
	s := a.in[1].Shape()
	b, c, dh, g := s[0], s[3], d.D, d.H/d.G
	qkv, keys, values, spans, y := data[T](a, 0), data[T](a, 1), data[T](a, 2), a.ids, out[T](a)
	var cos, sin []T
	if d.rotary {
		cos, sin = data[T](a, 4), data[T](a, 5)
	}
	kernels.ParallelFor(b*d.G, float64(4*g*c*dh+2*dh*c*cacheReadCost), func(lo, hi int) {
		w, q, kNew := make([]T, c+1), make([]T, dh), make([]T, dh)
		for bg := lo; bg < hi; bg++ { // every line the loop below reads or writes, asked for at once
			first, pos := spans[2*(bg/d.G)], spans[2*(bg/d.G)+1]
			kernels.PrefetchRows(keys[bg*dh*c:], dh, c, first, pos+1)
			kernels.PrefetchRows(values[bg*dh*c:], dh, c, first, pos+1)
		}
		for bg := lo; bg < hi; bg++ {
			row, grp := bg/d.G, bg%d.G
			first, pos := spans[2*row], spans[2*row+1]
			n := pos - first // cache slots seen
			proj := qkv[row*d.width() : (row+1)*d.width()]
			var rc, rs []T
			if cos != nil {
				rc, rs = cos[row*dh:(row+1)*dh], sin[row*dh:(row+1)*dh]
			}
			turn(kNew, proj[(d.H+grp)*dh:(d.H+grp+1)*dh], rc, rs, d.rotatedHalf())
			vNew := proj[(d.H+d.G+grp)*dh : (d.H+d.G+grp+1)*dh]
			kt, vt := keys[bg*dh*c:(bg+1)*dh*c], values[bg*dh*c:(bg+1)*dh*c] // (d, C) each
			for i := range kNew {
				kt[i*c+pos], vt[i*c+pos] = kNew[i], vNew[i]
			}
			for j := 0; j < g; j++ {
				h := grp*g + j
				turn(q, proj[h*dh:(h+1)*dh], rc, rs, d.rotatedHalf())
				scores := w[:n+1]
				clear(scores)
				kernels.AddScaledRows(scores[:n], q, kt[first:], c) // (n) = q K[:, slots]
				scores[n] = dotT(q, kNew)                           // the new position's own key
				kernels.ScaleAdd(scores, T(d.scale), 0)
				if d.SoftCap > 0 {
					capScores(scores, d.SoftCap)
				}
				if d.slopes != nil {
					for t := range scores[:n] {
						scores[t] -= T(d.slopes[h] * float64(pos-first-t))
					}
				}
				inv := 1 / expNormalize(scores)
				yj := y[(row*d.H+h)*dh : (row*d.H+h+1)*dh]
				kernels.Gemm(false, true, 1, dh, n, scores, n, vt[first:], c, 0, yj, dh) // (d) = V[:, slots] w
				for i := range yj {
					yj[i] = (yj[i] + scores[n]*vNew[i]) * inv
				}
			}
		}
	})
}

// capScores sets each score s to cap·tanh(s/cap), in float64.
func capScores[T float](scores []T, cap float64) {
	for i, s := range scores {
		scores[i] = T(cap * math.Tanh(float64(s)/cap))
	}
}

// dotT is x·y, accumulated in float64 for float64 and in float32 lanes for
// float32 (as the GEMMs do).
func dotT[T float](x, y []T) T {
	var s0, s1, s2, s3 T
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// expNormalize sets w = exp(w - max w) and returns the sum: the vector exp
// kernel for float32, math.Exp for float64.
func expNormalize[T float](w []T) T {
	if w32, ok := any(w).([]float32); ok {
		return T(kernels.ExpShift(w32, w32, 1, kernels.MaxOf(w32)))
	}
	m := w[0]
	for _, x := range w[1:] {
		m = max(m, x)
	}
	var sum T
	for i, x := range w {
		w[i] = T(math.Exp(float64(x - m)))
		sum += w[i]
	}
	return sum
}
