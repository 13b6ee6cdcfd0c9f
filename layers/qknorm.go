package layers

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/ops"
)

// QKNorm holds the weights of QK-norm (Qwen 3's q_norm and k_norm): after
// the head split, before rotary positions, each head's q is normalised by
// an RMSNorm over its d channels,
//
//	q' = q / sqrt(mean_d(q^2) + Eps) * Q
//
// and each key head's k likewise with K. Every query head shares Q, every
// key head (with grouped-query attention, every kv head) shares K.
// With All (OLMo 2's) one RMSNorm spans a token's whole q projection (H·d),
// Q (H·d), and one its whole k projection (G·d), K (G·d), before the head
// split. Offset is added to the weights (1 for Gemma's (1 + w)).
type QKNorm struct {
	Q, K   *gorgonia.Node // (d) each, or with All (H·d) and (G·d); named like "blocks.0.attn.q_norm.weight"
	Eps    float64
	All    bool
	Offset float64
}

// check reports weights that are not (d) vectors ((H·d) and (G·d) with
// All) or an eps that is negative or not finite; a nil QKNorm (none) is
// fine.
func (n *QKNorm) check(heads, kv, dh int) error {
	if n == nil {
		return nil
	}
	q, k, want := dh, dh, fmt.Sprintf("want (%d) each, the head size", dh)
	if n.All {
		q, k = heads*dh, kv*dh
		want = fmt.Sprintf("want (%d) and (%d) over the whole projections", q, k)
	}
	vector := func(w *gorgonia.Node, width int) bool { return w != nil && w.Dims() == 1 && w.Shape()[0] == width }
	if !vector(n.Q, q) || !vector(n.K, k) {
		return errors.Errorf("attention: qk norm weights %v and %v, %s", nodeShape(n.Q), nodeShape(n.K), want)
	}
	if !(n.Eps >= 0) || math.IsInf(n.Eps, 0) {
		return errors.Errorf("attention: qk norm eps %v must be finite and not negative", n.Eps)
	}
	return nil
}

// normalizeQKV is the fused path's QK-norm: one op on the projection qkv
// (N, (H+2G)*d) that normalises its query and key heads (or with All its
// whole query and key parts) and copies its value heads, before the head
// split, so the forward's split and the decoding step's
// ops.CacheAttention read it as the projection. Without QK-norm qkv is
// returned as it is.
func (a *MultiHeadSelfAttention) normalizeQKV(p string, qkv *gorgonia.Node) *gorgonia.Node {
	n := a.QKNorm
	if n == nil {
		return qkv
	}
	q, k := offsetWeight(n.Q, n.Offset), offsetWeight(n.K, n.Offset)
	return node(p + ".qk_norm")(ops.QKNorm(qkv, q, k, a.Heads, a.kvHeads(a.Heads), n.Eps)) // (N, (H+2G)*d)
}

// normalizeWhole is the Gorgonia path's QK-norm with All, on the
// projection qkv (N, (H+2G)*d) before the head split: its query columns
// [0, H*d) and key columns [H*d, (H+G)*d) each one RMSNorm per row, its
// value columns as they are, joined again. Without All it returns qkv (the
// heads are normalised after the split).
func (a *MultiHeadSelfAttention) normalizeWhole(p string, qkv *gorgonia.Node) *gorgonia.Node {
	n := a.QKNorm
	if n == nil || !n.All {
		return qkv
	}
	hd, kd := n.Q.Shape()[0], n.K.Shape()[0]
	cols := func(name string, from, to int) *gorgonia.Node {
		return node(p + "." + name)(gorgonia.Slice(qkv, nil, gorgonia.S(from, to))) // (N, to-from)
	}
	q := rmsNormGorgonia(p+".q_norm", cols("q_cols", 0, hd), offsetWeight(n.Q, n.Offset), n.Eps)     // (N, H*d)
	k := rmsNormGorgonia(p+".k_norm", cols("k_cols", hd, hd+kd), offsetWeight(n.K, n.Offset), n.Eps) // (N, G*d)
	v := cols("v_cols", hd+kd, qkv.Shape()[1])                                                       // (N, G*d)
	return node(p + ".qk_norm")(gorgonia.Concat(1, q, k, v))                                         // (N, (H+2G)*d)
}

// query and key finish the Gorgonia path's q or k of some heads (..., T,
// d) after the split, p being the layer's name: QK-norm, then rotary
// positions, each when the layer has it.
// With rotary positions the Tap sees them before the rotation too, as
// p.q_in and p.k_in.
func (a *MultiHeadSelfAttention) query(p string, q *gorgonia.Node) *gorgonia.Node {
	return a.rotate(p+".q", a.beforeRotary(p+".q_in", a.QKNorm.queries(p+".q_norm", q)))
}

func (a *MultiHeadSelfAttention) key(p string, k *gorgonia.Node) *gorgonia.Node {
	return a.rotate(p+".k", a.beforeRotary(p+".k_in", a.QKNorm.keys(p+".k_norm", k)))
}

// beforeRotary passes q or k through the Tap as name when the layer has
// rotary positions, and returns it as it is otherwise.
func (a *MultiHeadSelfAttention) beforeRotary(name string, x *gorgonia.Node) *gorgonia.Node {
	if len(a.RotaryFreqs) == 0 {
		return x
	}
	return at(a.Tap, name, x)
}

// decodeQuery and decodeKey are query and key for a decoding step's q or
// k (B, n, d).
func (a *MultiHeadSelfAttention) decodeQuery(p string, q *gorgonia.Node, in DecodeInputs) *gorgonia.Node {
	return a.decodeRotate(p+".q", a.QKNorm.queries(p+".q_norm", q), in)
}

func (a *MultiHeadSelfAttention) decodeKey(p string, k *gorgonia.Node, in DecodeInputs) *gorgonia.Node {
	return a.decodeRotate(p+".k", a.QKNorm.keys(p+".k_norm", k), in)
}

// queries and keys are the Gorgonia path's QK-norm of q or k (..., d), some
// heads of either, named name; without QK-norm x is returned as it is.
// With All the heads were normalised before the split (normalizeWhole).
func (n *QKNorm) queries(name string, q *gorgonia.Node) *gorgonia.Node {
	if n == nil || n.All {
		return q
	}
	return rmsNormGorgonia(name, q, offsetWeight(n.Q, n.Offset), n.Eps)
}

func (n *QKNorm) keys(name string, k *gorgonia.Node) *gorgonia.Node {
	if n == nil || n.All {
		return k
	}
	return rmsNormGorgonia(name, k, offsetWeight(n.K, n.Offset), n.Eps)
}

// rmsNormGorgonia is x / sqrt(mean(x^2) + eps) * w over the last axis of x
// (..., d), w (d): RMSNorm's Gorgonia path (scaleRows) on the rows (N, d)
// of x; name names the output.
func rmsNormGorgonia(name string, x, w *gorgonia.Node, eps float64) *gorgonia.Node {
	s := x.Shape()
	dh := s[len(s)-1]
	rows := node(name + ".in_rows")(gorgonia.Reshape(x, tensor.Shape{s.TotalSize() / dh, dh})) // (N, d)
	sq := node(name + ".rows.sq")(gorgonia.Square(rows))                                       // (N, d)
	normed := scaleRows(name+".rows", rows, sq, w, nil, "ms", "rms", eps, nil, false)          // (N, d)
	return node(name)(gorgonia.Reshape(normed, s))                                             // (..., d)
}
