package layers

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/internal/ops"
)

// TestAttentionShapes: x (B*T, D) gives out (B*T, D) and weights
// (B, H, T, T), both at build time and in the computed values.
func TestAttentionShapes(t *testing.T) {
	for _, c := range []struct{ b, t, d, h int }{{1, 1, 4, 1}, {2, 3, 8, 2}, {3, 5, 12, 4}, {2, 7, 6, 6}} {
		t.Run(fmt.Sprintf("B%dT%dD%dH%d", c.b, c.t, c.d, c.h), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			g := gorgonia.NewGraph()
			x := NewParam(g, "x", graphtest.RandDense(rng, 1, c.b*c.t, c.d))
			a := newMHSAParams(rng, c.d, true).build(t, g, "attn", c.b, c.t, c.h, true)
			built, err := a.Forward(x, AttentionInputs{})
			if err != nil {
				t.Fatal(err)
			}
			out, w := built.Out, built.Weights
			graphtest.Run(t, g)
			wantOut, wantW := tensor.Shape{c.b * c.t, c.d}, tensor.Shape{c.b, c.h, c.t, c.t}
			if !out.Shape().Eq(wantOut) || !out.Value().Shape().Eq(wantOut) {
				t.Errorf("out shape %v / value %v, want %v", out.Shape(), out.Value().Shape(), wantOut)
			}
			if !w.Shape().Eq(wantW) || !w.Value().Shape().Eq(wantW) {
				t.Errorf("weights shape %v / value %v, want %v", w.Shape(), w.Value().Shape(), wantW)
			}
		})
	}
}

// TestAttentionMatchesPerHeadReference compares the graph (float64) with
// refAttention, a plain-Go loop over heads, for causal and bidirectional
// attention, with and without biases and a key padding mask.
// Tolerance: max abs difference 1e-12 on outputs and weights.
func TestAttentionMatchesPerHeadReference(t *testing.T) {
	const b, tt, d, h = 2, 5, 12, 3
	for _, c := range []struct {
		causal, bias, keyPad bool
	}{{true, false, false}, {true, true, false}, {false, true, false}, {true, true, true}, {false, false, true}} {
		t.Run(fmt.Sprintf("causal=%t,bias=%t,keypad=%t", c.causal, c.bias, c.keyPad), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			xv := graphtest.RandDense(rng, 1, b*tt, d)
			p := newMHSAParams(rng, d, c.bias)
			g := gorgonia.NewGraph()
			x := NewParam(g, "x", xv)
			var km *gorgonia.Node
			var kmv []float64
			if c.keyPad {
				// batch 0 pads its first key (so causal row 0 is fully masked), batch 1 its last two
				kmv = []float64{0, 1, 1, 1, 1, 1, 1, 1, 0, 0}
				km = NewParam(g, "key_mask", tensor.New(tensor.WithShape(b, tt), tensor.WithBacking(kmv)))
			}
			built := p.forward(t, g, x, b, tt, h, c.causal, AttentionInputs{KeyMask: km})
			out, w := built.Out, built.Weights
			graphtest.Run(t, g)
			refOut, refW := refAttention(xv.Float64s(), b, tt, h, c.causal, kmv, p)
			if e := graphtest.MaxAbsDiff(t, graphtest.Values(t, out), refOut); e > 1e-12 {
				t.Errorf("output differs from per-head reference by %.3g", e)
			}
			if e := graphtest.MaxAbsDiff(t, graphtest.Values(t, w), refW); e > 1e-12 {
				t.Errorf("weights differ from per-head reference by %.3g", e)
			}
		})
	}
}

// TestFusedQKVEqualsSeparate: the fused D -> 3D projection split by
// Reshape/Transpose/Slice gives the same attention as three separate D -> D
// projections whose weights are the row blocks [q | k | v] of the fused one,
// each reshaped to heads on its own. Tolerance: max abs difference 1e-12.
func TestFusedQKVEqualsSeparate(t *testing.T) {
	const b, tt, d, h = 2, 4, 8, 2
	dh := d / h
	rng := rand.New(rand.NewPCG(5, 6))
	xv := graphtest.RandDense(rng, 1, b*tt, d)
	p := newMHSAParams(rng, d, true)

	g := gorgonia.NewGraph()
	x := NewParam(g, "x", xv)
	built := p.forward(t, g, x, b, tt, h, true, AttentionInputs{})
	fused, fusedW := built.Out, built.Weights

	sep := gorgonia.NewGraph()
	xs := NewParam(sep, "x", xv)
	var heads [3]*gorgonia.Node
	for i, name := range []string{"q", "k", "v"} {
		w := tensor.New(tensor.WithShape(d, d), tensor.WithBacking(append([]float64(nil), p.qkvW.Float64s()[i*d*d:(i+1)*d*d]...)))
		bias := tensor.New(tensor.WithShape(d), tensor.WithBacking(append([]float64(nil), p.qkvB.Float64s()[i*d:(i+1)*d]...)))
		lin, err := NewLinear(NewParam(sep, name+".weight", w), NewParam(sep, name+".bias", bias))
		if err != nil {
			t.Fatal(err)
		}
		y := graphtest.Must(t)(lin.Forward(xs))                                // (B*T, D)
		y = graphtest.Must(t)(gorgonia.Reshape(y, tensor.Shape{b, tt, h, dh})) // (B, T, H, d)
		heads[i] = graphtest.Must(t)(gorgonia.Transpose(y, 0, 2, 1, 3))        // (B, H, T, d)
	}
	scores := graphtest.Must(t)(gorgonia.BatchedMatMul(heads[0], heads[1], false, true))     // (B, H, T, T)
	sepW := graphtest.Must(t)(ops.MaskedSoftmax(scores, nil, ops.Mask{Causal: true}, 1/2.0)) // (B, H, T, T), 1/sqrt(4)
	y := graphtest.Must(t)(gorgonia.BatchedMatMul(sepW, heads[2]))                           // (B, H, T, d)
	y = graphtest.Must(t)(gorgonia.Transpose(y, 0, 2, 1, 3))                                 // (B, T, H, d)
	y = graphtest.Must(t)(gorgonia.Reshape(y, tensor.Shape{b * tt, d}))                      // (B*T, D)
	outLin, err := NewLinear(NewParam(sep, "out.weight", p.outW), NewParam(sep, "out.bias", p.outB))
	if err != nil {
		t.Fatal(err)
	}
	separate := graphtest.Must(t)(outLin.Forward(y)) // (B*T, D)

	graphtest.Run(t, g)
	graphtest.Run(t, sep)
	if e := graphtest.MaxAbsDiff(t, graphtest.Values(t, fused), graphtest.Values(t, separate)); e > 1e-12 {
		t.Errorf("fused output differs from separate projections by %.3g", e)
	}
	if e := graphtest.MaxAbsDiff(t, graphtest.Values(t, fusedW), graphtest.Values(t, sepW)); e > 1e-12 {
		t.Errorf("fused weights differ from separate projections by %.3g", e)
	}
}

// TestAttentionCausality: with causal attention, changing the input rows of
// positions > t leaves every output row and attention weight of queries <= t
// bitwise unchanged.
func TestAttentionCausality(t *testing.T) {
	const b, tt, d, h = 2, 6, 8, 2
	rng := rand.New(rand.NewPCG(7, 8))
	p := newMHSAParams(rng, d, true)
	xv := graphtest.RandDense(rng, 1, b*tt, d)
	g := gorgonia.NewGraph()
	x := NewParam(g, "x", xv)
	built := p.forward(t, g, x, b, tt, h, true, AttentionInputs{})
	out, w := built.Out, built.Weights
	vm := gorgonia.NewTapeMachine(g, gorgonia.TraceExec())
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	baseOut, baseW := append([]float64(nil), graphtest.Values(t, out)...), append([]float64(nil), graphtest.Values(t, w)...)
	for cut := 0; cut < tt-1; cut++ {
		xd := xv.Float64s()
		saved := append([]float64(nil), xd...)
		for bi := 0; bi < b; bi++ {
			for pos := cut + 1; pos < tt; pos++ {
				for c := 0; c < d; c++ {
					xd[(bi*tt+pos)*d+c] += rng.NormFloat64()
				}
			}
		}
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		o, wv := graphtest.Values(t, out), graphtest.Values(t, w)
		for bi := 0; bi < b; bi++ {
			for pos := 0; pos <= cut; pos++ {
				for c := 0; c < d; c++ {
					if i := (bi*tt+pos)*d + c; o[i] != baseOut[i] {
						t.Fatalf("cut %d: output (b %d, t %d) changed %v -> %v", cut, bi, pos, baseOut[i], o[i])
					}
				}
				for hi := 0; hi < h; hi++ {
					for j := 0; j < tt; j++ {
						if i := ((bi*h+hi)*tt+pos)*tt + j; wv[i] != baseW[i] {
							t.Fatalf("cut %d: weight (b %d, h %d, q %d, k %d) changed", cut, bi, hi, pos, j)
						}
					}
				}
			}
		}
		copy(xd, saved)
	}
}

// TestAttentionBuildErrors: impossible sizes fail at build time with an
// error that names the numbers.
func TestAttentionBuildErrors(t *testing.T) {
	g := gorgonia.NewGraph()
	rng := rand.New(rand.NewPCG(9, 9))
	lin := func(name string, out, in int) *Linear {
		l, err := NewLinear(NewParam(g, name, graphtest.RandDense(rng, 1, out, in)), nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// build makes a layer of batch 2, T = 3, D = 6 from qkv and out.
	build := func(batch, heads int, qkv, out *Linear) func() error {
		return func() error {
			_, err := NewMultiHeadSelfAttention(batch, 3, heads, qkv, out, AttentionOptions{})
			return err
		}
	}
	// forward runs a valid layer of batch 2, T = 3, D = 6, 2 heads on x and
	// the masks (either may be nil).
	forward := func(x, keyMask, dropMask *gorgonia.Node) func() error {
		return func() error {
			a, err := NewMultiHeadSelfAttention(2, 3, 2, lin(x.Name()+".qkv", 18, 6), lin(x.Name()+".out", 6, 6), AttentionOptions{})
			if err != nil {
				return err
			}
			_, err = a.Forward(x, AttentionInputs{KeyMask: keyMask, Dropout: dropMask})
			return err
		}
	}
	x := func(name string, shape ...int) *gorgonia.Node {
		return NewParam(g, name, graphtest.RandDense(rng, 1, shape...))
	}
	cases := []struct {
		name string
		make func() error
		want string
	}{
		{"heads do not divide d", build(2, 4, lin("a", 18, 6), lin("b", 6, 6)), "d_model = 6 is not divisible by heads = 4"},
		{"qkv not 3D", build(2, 2, lin("c", 12, 6), lin("d", 6, 6)), "qkv projection is 6 -> 12, want 6 -> 18"},
		{"out not D", build(2, 2, lin("e", 18, 6), lin("f", 5, 6)), "out projection is 6 -> 5, want 6 -> 6"},
		{"zero batch", build(0, 2, lin("g", 18, 6), lin("h", 6, 6)), "batch 0"},
		{"input rows", forward(x("x", 5, 6), nil, nil), "input shape (5, 6), want (B*T, D) = (6, 6)"},
		{"dropout mask", forward(x("x2", 6, 6), nil, x("m", 2, 2, 3, 2)), "dropout mask shape (2, 2, 3, 2), want (2, 2, 3, 3)"},
		{"key mask", forward(x("x3", 6, 6), x("km", 3, 2), nil), "key mask shape (3, 2), want (2, 3)"},
	}
	for _, c := range cases {
		err := c.make()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}
