package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// TestLayerNormMatchesPyTorch: forward and gradients of sum(c * ln(x)) for
// torch.nn.LayerNorm(4) (eps 1e-5) in float64 with the weights below
// (PyTorch 1.13). Tolerance 1e-12 absolute.
func TestLayerNormMatchesPyTorch(t *testing.T) {
	eachPath(t, func(t *testing.T, path Path) {
		g := gorgonia.NewGraph()
		dense := func(name string, v []float64, shape ...int) *gorgonia.Node {
			return NewParam(g, name, tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v)))
		}
		x := dense("x", []float64{1, 2, 4, -1, 0.5, -0.25, 0.75, 0.125}, 2, 4)
		w := dense("ln.weight", []float64{1, 0.5, -2, 1.5}, 4)
		b := dense("ln.bias", []float64{0, 0.125, 0.25, -0.375}, 4)
		c := dense("c", []float64{1, -2, 0.5, 3, 0.25, 1, -1, 2}, 2, 4)
		ln, err := NewLayerNorm(w, b)
		if err != nil {
			t.Fatal(err)
		}
		ln.Path = path
		y := graphtest.Must(t)(ln.Forward(x))
		loss := graphtest.Must(t)(gorgonia.Sum(graphtest.Must(t)(gorgonia.HadamardProd(y, c))))
		grads, err := gorgonia.Grad(loss, x, w, b)
		if err != nil {
			t.Fatal(err)
		}
		graphtest.Run(t, g)
		checks := []struct {
			name string
			node *gorgonia.Node
			want []float64
		}{
			{"y", y, []float64{-0.2773496714211404, 0.2636748357105704, -2.523496714211406, -2.455122535658554,
				0.5773301611695607, -0.5760437671344667, -2.224272119298117, -0.9935680298245294}},
			{"dx", grads[0], []float64{-0.24534681799797542, -0.7253770319760163, 0.5333599114370267, 0.43736393853696587,
				-3.3932694226565614, -1.8448072788778205, 0.9291531182668433, 4.308923583267539}},
			{"dweight", grads[1], []float64{-0.13301713112875024, -1.956786877111215, -0.543761881096207, -4.985002444416481}},
			{"dbias", grads[2], []float64{1.25, -1, -0.5, 5}},
		}
		for _, ch := range checks {
			if e := graphtest.MaxAbsDiff(t, graphtest.Values(t, ch.node), ch.want); e > 1e-12 {
				t.Errorf("%s differs from PyTorch by %.3g: %v", ch.name, e, graphtest.Values(t, ch.node))
			}
		}
	})
}

// TestLinearGradients: y = x W^T + b against a plain-Go reference (forward
// 1e-12) and d sum(c * y) against the closed forms dx = c W, dW = c^T x,
// db = colsum(c) computed by loops (1e-12), in float64; the same graph in
// float32 agrees with float64 within 1e-5.
func TestLinearGradients(t *testing.T) {
	const n, in, out = 5, 4, 3
	rng := rand.New(rand.NewPCG(31, 32))
	xv, wv, bv, cv := graphtest.RandDense(rng, 1, n, in), graphtest.RandDense(rng, 1, out, in), graphtest.RandDense(rng, 1, out), graphtest.RandDense(rng, 1, n, out)
	build := func(conv func(*tensor.Dense) *tensor.Dense) (*gorgonia.ExprGraph, *gorgonia.Node, gorgonia.Nodes) {
		g := gorgonia.NewGraph()
		x, w, b := NewParam(g, "x", conv(xv)), NewParam(g, "w", conv(wv)), NewParam(g, "b", conv(bv))
		lin, err := NewLinear(w, b)
		if err != nil {
			t.Fatal(err)
		}
		y := graphtest.Must(t)(lin.Forward(x))
		loss := graphtest.Must(t)(gorgonia.Sum(graphtest.Must(t)(gorgonia.HadamardProd(y, NewParam(g, "c", conv(cv))))))
		grads, err := gorgonia.Grad(loss, x, w, b)
		if err != nil {
			t.Fatal(err)
		}
		return g, y, grads
	}
	g, y, grads := build(func(d *tensor.Dense) *tensor.Dense { return d })
	graphtest.Run(t, g)
	x, w, c := xv.Float64s(), wv.Float64s(), cv.Float64s()
	dx, dw, db := make([]float64, n*in), make([]float64, out*in), make([]float64, out)
	for r := 0; r < n; r++ {
		for o := 0; o < out; o++ {
			db[o] += c[r*out+o]
			for i := 0; i < in; i++ {
				dx[r*in+i] += c[r*out+o] * w[o*in+i]
				dw[o*in+i] += c[r*out+o] * x[r*in+i]
			}
		}
	}
	want := [][]float64{refLinear(x, n, wv, bv), dx, dw, db}
	got := []*gorgonia.Node{y, grads[0], grads[1], grads[2]}
	for i, name := range []string{"y", "dx", "dW", "db"} {
		if e := graphtest.MaxAbsDiff(t, graphtest.Values(t, got[i]), want[i]); e > 1e-12 {
			t.Errorf("float64 %s differs from reference by %.3g", name, e)
		}
	}
	g32, y32, grads32 := build(graphtest.ToF32)
	graphtest.Run(t, g32)
	got32 := []*gorgonia.Node{y32, grads32[0], grads32[1], grads32[2]}
	for i, name := range []string{"y", "dx", "dW", "db"} {
		if e := graphtest.MaxAbsDiff(t, graphtest.Values(t, got32[i]), want[i]); e > 1e-5 {
			t.Errorf("float32 %s differs from float64 reference by %.3g", name, e)
		}
	}
}

// TestEmbeddingLookup: rows come back in id order and the table gradient
// accumulates repeated ids (exact), on both paths (the Gorgonia path is
// ByIndices).
func TestEmbeddingLookup(t *testing.T) {
	eachPath(t, func(t *testing.T, path Path) {
		g := gorgonia.NewGraph()
		table := NewParam(g, "emb", tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6})))
		ids := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(4), gorgonia.WithName("ids"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(4), tensor.WithBacking([]int{2, 0, 2, 1}))))
		emb, err := NewEmbedding(table)
		if err != nil {
			t.Fatal(err)
		}
		emb.Path = path
		rows := graphtest.Must(t)(emb.Forward(ids))
		grads, err := gorgonia.Grad(graphtest.Must(t)(gorgonia.Sum(rows)), table)
		if err != nil {
			t.Fatal(err)
		}
		graphtest.Run(t, g)
		if e := graphtest.MaxAbsDiff(t, graphtest.Values(t, rows), []float64{5, 6, 1, 2, 5, 6, 3, 4}); e != 0 {
			t.Errorf("rows %v", graphtest.Values(t, rows))
		}
		if e := graphtest.MaxAbsDiff(t, graphtest.Values(t, grads[0]), []float64{1, 1, 1, 1, 2, 2}); e != 0 {
			t.Errorf("table gradient %v, want counts of each id", graphtest.Values(t, grads[0]))
		}
	})
}

// TestBlockShapesAndErrors: a full pre-LN block maps (B*T, D) to (B*T, D)
// with finite values; mismatched parts are rejected at build time, and so
// are a sublayer without a norm before or after it and a parallel residual
// other than pre-norm's.
func TestBlockShapesAndErrors(t *testing.T) {
	const b, tt, d, h, f = 2, 3, 4, 2, 6
	rng := rand.New(rand.NewPCG(41, 42))
	g := gorgonia.NewGraph()
	attn := newMHSAParams(rng, d, true).build(t, g, "attn", b, tt, h, true)
	ones := func(name string) *gorgonia.Node {
		return NewParam(g, name, tensor.New(tensor.WithShape(d), tensor.WithBacking([]float64{1, 1, 1, 1})))
	}
	ln1, err := NewLayerNorm(ones("ln1.weight"), ones("ln1.bias"))
	if err != nil {
		t.Fatal(err)
	}
	ln2, err := NewLayerNorm(ones("ln2.weight"), ones("ln2.bias"))
	if err != nil {
		t.Fatal(err)
	}
	fc, err := NewLinear(NewParam(g, "fc.weight", graphtest.RandDense(rng, 1, f, d)), NewParam(g, "fc.bias", graphtest.RandDense(rng, 1, f)))
	if err != nil {
		t.Fatal(err)
	}
	proj, err := NewLinear(NewParam(g, "proj.weight", graphtest.RandDense(rng, 1, d, f)), nil)
	if err != nil {
		t.Fatal(err)
	}
	mlp, err := NewMLP(fc, proj, GELUTanh)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewMLP(fc, fc, GELUTanh); err == nil {
		t.Error("mlp with fc as proj accepted")
	}
	if _, err := NewBlock(nil, attn, ln2, mlp); err == nil {
		t.Error("full block without ln1 accepted")
	}
	for name, bl := range map[string]*Block{
		"no norm around the MLP":         {LN1: ln1, Attn: attn, MLP: mlp},
		"a parallel residual post-norm":  {LN1Post: ln1, Attn: attn, LN2Post: ln2, MLP: mlp, Parallel: true},
		"a parallel residual with posts": {LN1: ln1, LN1Post: ln1, Attn: attn, LN2: ln2, MLP: mlp, Parallel: true},
	} {
		if _, err := NewFullBlock(bl); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	for name, bl := range map[string]*Block{
		"post-norm": {LN1Post: ln1, Attn: attn, LN2Post: ln2, MLP: mlp},
		"sandwich":  {LN1: ln1, LN1Post: ln1, Attn: attn, LN2: ln2, LN2Post: ln2, MLP: mlp},
		"parallel":  {LN1: ln1, Attn: attn, LN2: ln2, MLP: mlp, Parallel: true},
	} {
		if _, err := NewFullBlock(bl); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	block, err := NewBlock(ln1, attn, ln2, mlp)
	if err != nil {
		t.Fatal(err)
	}
	built, err := block.Forward(NewParam(g, "x", graphtest.RandDense(rng, 1, b*tt, d)), AttentionInputs{})
	if err != nil {
		t.Fatal(err)
	}
	out, w := built.Out, built.Attn.Weights
	graphtest.Run(t, g)
	if !out.Shape().Eq(tensor.Shape{b * tt, d}) || !w.Shape().Eq(tensor.Shape{b, h, tt, tt}) {
		t.Errorf("block shapes %v, %v", out.Shape(), w.Shape())
	}
	for _, v := range graphtest.Values(t, out) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("block output not finite: %v", graphtest.Values(t, out))
		}
	}
}

// TestEmbeddingRejectsOutOfRangeID: unlike gorgonia.ByIndices, an id
// outside the table fails the run and the error names it and its position.
func TestEmbeddingRejectsOutOfRangeID(t *testing.T) {
	g := gorgonia.NewGraph()
	table := NewParam(g, "emb", tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6})))
	ids := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(3), gorgonia.WithName("ids"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(3), tensor.WithBacking([]int{2, 7, 0}))))
	emb, err := NewEmbedding(table)
	if err != nil {
		t.Fatal(err)
	}
	graphtest.Must(t)(emb.Forward(ids))
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	err = vm.RunAll()
	if err == nil || !strings.Contains(err.Error(), "id 7 at position 1") {
		t.Errorf("error %v, want one naming id 7 at position 1", err)
	}
}

// normKind is one of the norms a block takes.
type normKind struct {
	name      string
	bias, rms bool
}

var normKinds = []normKind{{"layernorm", true, false}, {"layernorm without bias", false, false}, {"rmsnorm", false, true}}

// buildNorm makes the norm of kind k from p's "ln.weight" (and "ln.bias"
// when it has one) on path, with epsilon eps; it returns the norm and its
// parameter nodes, the weight first.
func buildNorm(t *testing.T, g *gorgonia.ExprGraph, k normKind, p map[string]*tensor.Dense, path Path, eps float64) (Norm, gorgonia.Nodes) {
	t.Helper()
	w := NewParam(g, "ln.weight", p["ln.weight"])
	if k.rms {
		n, err := NewRMSNorm(w)
		if err != nil {
			t.Fatal(err)
		}
		n.Path, n.Eps = path, eps
		return n, gorgonia.Nodes{w}
	}
	params := gorgonia.Nodes{w}
	var b *gorgonia.Node
	if k.bias {
		b = NewParam(g, "ln.bias", p["ln.bias"])
		params = append(params, b)
	}
	n, err := NewLayerNorm(w, b)
	if err != nil {
		t.Fatal(err)
	}
	n.Path, n.Eps = path, eps
	return n, params
}

// refNorm is the norm of kind k of each row of x (rows, d), from its
// definition (graphtest.Norm).
func refNorm(k normKind, x []float64, w, b []float64, eps float64) []float64 {
	if !k.bias {
		b = nil
	}
	return graphtest.Norm(x, w, b, eps, k.rms)
}

// TestNormsMatchReference: LayerNorm with and without bias and RMSNorm, on
// both paths, in float64 and float32, at eps 0.1 (so a path that ignored
// Eps would show): the output equals refNorm (float64 within 1e-12,
// float32 within 1e-5, relative to the largest entry), and the gradients
// of sum(c * y) with respect to x, the weight and the bias equal central
// differences (h 1e-6) of refNorm's cost (within 1e-7 and 1e-5).
func TestNormsMatchReference(t *testing.T) {
	const n, d, eps = 5, 6, 0.1
	rng := rand.New(rand.NewPCG(51, 52))
	xv, cv := graphtest.RandDense(rng, 1, n, d), graphtest.RandDense(rng, 1, n, d)
	weights := map[string]*tensor.Dense{"ln.weight": graphtest.RandDense(rng, 0.5, d), "ln.bias": graphtest.RandDense(rng, 0.5, d)}
	x, w, b, c := xv.Float64s(), weights["ln.weight"].Float64s(), weights["ln.bias"].Float64s(), cv.Float64s()
	for _, k := range normKinds {
		cost := func() float64 {
			var s float64
			for i, y := range refNorm(k, x, w, b, eps) {
				s += c[i] * y
			}
			return s
		}
		want := [][]float64{refNorm(k, x, w, b, eps), graphtest.CentralDifferences(cost, x), graphtest.CentralDifferences(cost, w)}
		if k.bias {
			want = append(want, graphtest.CentralDifferences(cost, b))
		}
		for _, path := range Paths {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				t.Run(fmt.Sprintf("%s/%s/%v", k.name, path, dt), func(t *testing.T) {
					tol, gradTol, conv := 1e-12, 1e-7, func(v *tensor.Dense) *tensor.Dense { return v.Clone().(*tensor.Dense) }
					if dt == tensor.Float32 {
						tol, gradTol, conv = 1e-5, 1e-5, graphtest.ToF32
					}
					g := gorgonia.NewGraph()
					p := map[string]*tensor.Dense{}
					for name, v := range weights {
						p[name] = conv(v)
					}
					xn := NewParam(g, "x", conv(xv))
					norm, params := buildNorm(t, g, k, p, path, eps)
					y := graphtest.Must(t)(norm.Forward(xn))
					cost := graphtest.Must(t)(gorgonia.Sum(graphtest.Must(t)(gorgonia.HadamardProd(y, NewParam(g, "c", conv(cv))))))
					_, grads := graphtest.Gradients(t, g, cost, append(gorgonia.Nodes{xn}, params...))
					graphtest.CheckRelative(t, "output", graphtest.Values(t, y), want[0], tol)
					for i, what := range []string{"dx", "dweight", "dbias"}[:len(grads)] {
						graphtest.CheckRelative(t, what, grads[i], want[i+1], gradTol)
					}
				})
			}
		}
	}
}

// TestNormErrors: a weight that is not a vector, a bias of another length
// and an input of another width are one-line errors naming the shapes.
func TestNormErrors(t *testing.T) {
	g := gorgonia.NewGraph()
	param := func(name string, shape ...int) *gorgonia.Node {
		return NewParam(g, name, tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Float64)))
	}
	w4, b3, x := param("w", 4), param("b", 3), param("x", 2, 3)
	rms, err := NewRMSNorm(w4)
	if err != nil {
		t.Fatal(err)
	}
	_, forwardErr := rms.Forward(x)
	_, rmsErr := NewRMSNorm(param("m", 2, 2))
	_, nilErr := NewRMSNorm(nil)
	_, lnErr := NewLayerNorm(w4, b3)
	for _, c := range []struct {
		err  error
		want string
	}{
		{forwardErr, "rms norm w: input shape (2, 3), want (N, 4)"},
		{rmsErr, "rms norm: weight (2, 2) must be a vector"},
		{nilErr, "rms norm: weight () must be a vector"},
		{lnErr, "layer norm: weight (4) and bias (3) must be equal-length vectors"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) || strings.Contains(c.err.Error(), "\n") {
			t.Errorf("error %v, want one line containing %q", c.err, c.want)
		}
	}
}
