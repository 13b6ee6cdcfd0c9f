package engine

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// named names n (a node a test reads back in errors) and returns it.
func named(name string, n *gorgonia.Node) *gorgonia.Node {
	gorgonia.WithName(name)(n)
	return n
}

// TestMachineReuseKinds pins which of Gorgonia's ops are handed their last
// value as it is, zeroed, or not at all (overwritesAll names the first kind
// by type, which an upgrade could rename).
func TestMachineReuseKinds(t *testing.T) {
	g := gorgonia.NewGraph()
	must := graphtest.Must(t)
	rng := rand.New(rand.NewPCG(1, 2))
	a := graphtest.Param(g, "a", graphtest.RandDense(rng, 1, 3, 4))
	b := graphtest.Param(g, "b", graphtest.RandDense(rng, 1, 3, 4))
	w := graphtest.Param(g, "w", graphtest.RandDense(rng, 1, 5, 4))
	bias := graphtest.Param(g, "bias", graphtest.RandDense(rng, 1, 4))
	x4 := graphtest.Param(g, "x4", graphtest.RandDense(rng, 1, 2, 3, 4, 5))
	broadcast := must(gorgonia.BroadcastAdd(a, bias, nil, []byte{0}))
	var repeat *gorgonia.Node
	for _, n := range g.AllNodes() {
		if strings.HasPrefix(fmt.Sprint(n.Op()), "Repeat") {
			repeat = n
		}
	}
	if repeat == nil {
		t.Fatal("BroadcastAdd made no Repeat node")
	}
	sliced := must(gorgonia.Slice(a, gorgonia.S(1)))
	sum := must(gorgonia.Sum(sliced))
	grads, err := gorgonia.Grad(sum, a)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		n    *gorgonia.Node
		want reuse
	}{
		{"Add", must(gorgonia.Add(a, b)), reuseOverwrite},
		{"HadamardProd", must(gorgonia.HadamardProd(a, b)), reuseOverwrite},
		{"BroadcastAdd", broadcast, reuseOverwrite},
		{"Repeat (of BroadcastAdd)", repeat, reuseOverwrite},
		{"Mul", must(gorgonia.Mul(a, must(gorgonia.Transpose(w)))), reuseOverwrite},
		{"BatchedMatMul", must(gorgonia.BatchedMatMul(x4, x4, false, true)), reuseOverwrite},
		{"the gradient of Slice", grads[0], reuseZeroed},
		{"Transpose", must(gorgonia.Transpose(w)), reuseNever},
		{"Reshape", must(gorgonia.Reshape(a, tensor.Shape{4, 3})), reuseNever},
		{"Tanh", must(gorgonia.Tanh(a)), reuseNever},
	} {
		if got := reuseOf(c.n.Op()); got != c.want {
			t.Errorf("%s (%T): reuse kind %d, want %d", c.what, c.n.Op(), got, c.want)
		}
	}
	if !strings.HasPrefix(fmt.Sprint(grads[0].Op()), "T[1:2") {
		t.Errorf("the gradient of Slice is %v, want sliceIncrOp's T[1:2...]+=...", grads[0].Op())
	}
}

// TestMachineRunsAgainAfterError: a failing op fails RunAll with the
// node's name; once the cause is gone the next run is right, also for the
// op whose previous value the failed run had half used. Value reads the op
// node not bound as an output (y) and an input (x) after each run.
func TestMachineRunsAgainAfterError(t *testing.T) {
	g := gorgonia.NewGraph()
	must := graphtest.Must(t)
	xv := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))
	wv := tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{1, 0, -1, 2, 0.5, 1}))
	x := graphtest.Param(g, "x", xv)
	w := graphtest.Param(g, "w", wv)
	y := named("y", must(gorgonia.Mul(x, w)))
	z := named("z", must(gorgonia.Add(y, y)))
	vm, err := NewMachine(g, z)
	if err != nil {
		t.Fatal(err)
	}
	wantY := []float64{1 - 2 + 1.5, 4 + 3, 4 - 5 + 3, 10 + 6}
	want := []float64{2 * wantY[0], 2 * wantY[1], 2 * wantY[2], 2 * wantY[3]}
	check := func() {
		t.Helper()
		if got := z.Value().Data().([]float64); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("z = %v, want %v", got, want)
		}
		if got := vm.Value(y).Data(); fmt.Sprint(got) != fmt.Sprint(wantY) {
			t.Fatalf("Value(y) = %v, want %v", got, wantY)
		}
		if got := vm.Value(x); got != gorgonia.Value(xv) {
			t.Fatalf("Value(x) is %p, not x's own value %p", got, xv)
		}
	}
	for range 2 {
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		check()
	}
	if err := xv.Reshape(3, 2); err != nil { // (3, 2) x (3, 2) does not multiply
		t.Fatal(err)
	}
	err = vm.RunAll()
	if err == nil || !strings.Contains(err.Error(), "y (") {
		t.Fatalf("RunAll with x of shape (3, 2): error %v, want one naming y", err)
	}
	if err := xv.Reshape(2, 3); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		check()
	}
}

// TestMachineNeverWritesIntoInputs: an op whose value is a view of an
// input is not handed that view back. A Repeat of one (BroadcastAdd of a
// single row, as a batch-1 LayerNorm has) returns its input itself; after
// the input node is bound to a new tensor, the old one stays untouched and
// the output follows the new one.
func TestMachineNeverWritesIntoInputs(t *testing.T) {
	g := gorgonia.NewGraph()
	must := graphtest.Must(t)
	a := graphtest.Param(g, "a", tensor.New(tensor.WithShape(1, 3), tensor.WithBacking([]float64{1, 2, 3})))
	first := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{10, 20, 30}))
	bias := graphtest.Param(g, "bias", first)
	out := named("out", must(gorgonia.BroadcastAdd(a, bias, nil, []byte{0}))) // (1, 3)
	vm, err := NewMachine(g, out)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		bias []float64
		want string
	}{{nil, "[11 22 33]"}, {nil, "[11 22 33]"}, {[]float64{100, 200, 300}, "[101 202 303]"}, {[]float64{-1, -2, -3}, "[0 0 0]"}} {
		if c.bias != nil {
			if err := gorgonia.Let(bias, tensor.New(tensor.WithShape(3), tensor.WithBacking(c.bias))); err != nil {
				t.Fatal(err)
			}
		}
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(out.Value().Data()); got != c.want {
			t.Errorf("bias %v: out = %s, want %s", bias.Value().Data(), got, c.want)
		}
		if got := fmt.Sprint(first.Data()); got != "[10 20 30]" {
			t.Fatalf("the first bias tensor became %s", got)
		}
	}
}

// TestNewMachineRefusesForeignOutput: an output node of another graph is
// refused by name, rather than left unbound.
func TestNewMachineRefusesForeignOutput(t *testing.T) {
	must := graphtest.Must(t)
	g, other := gorgonia.NewGraph(), gorgonia.NewGraph()
	a := graphtest.Param(g, "a", graphtest.RandDense(rand.New(rand.NewPCG(1, 2)), 1, 2))
	must(gorgonia.Neg(a))
	b := graphtest.Param(other, "b", tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2})))
	foreign := named("foreign", must(gorgonia.Neg(b)))
	_, err := NewMachine(g, foreign)
	if want := "output foreign is not in the graph"; err == nil || err.Error() != want {
		t.Fatalf("NewMachine with another graph's output: error %v, want %q", err, want)
	}
}

// TestOneShotMachineHandsMemoryOn: over a chain of sixteen 1 MiB sums, a
// one-shot machine's first run hands each value let go of to a later sum
// (a few MiB allocated, where NewMachine allocates every one, 16 MiB), and
// its output is NewMachine's.
func TestOneShotMachineHandsMemoryOn(t *testing.T) {
	const links = 16
	chain := func() (*gorgonia.ExprGraph, *gorgonia.Node) {
		g := gorgonia.NewGraph()
		must := graphtest.Must(t)
		x := graphtest.Param(g, "x", graphtest.RandDense(rand.New(rand.NewPCG(3, 4)), 1, 512, 256)) // float64: 1 MiB
		y := x
		for i := range links {
			y = named(fmt.Sprintf("y%d", i), must(gorgonia.Add(y, x)))
		}
		return g, y
	}
	run := func(newMachine func(*gorgonia.ExprGraph, ...*gorgonia.Node) (*Machine, error)) (allocated uint64, out []float64) {
		g, y := chain()
		vm, err := newMachine(g, y)
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc, y.Value().Data().([]float64)
	}
	const mib = 1 << 20
	keptBytes, want := run(NewMachine)
	oneShotBytes, got := run(NewOneShotMachine)
	if keptBytes < links*mib || oneShotBytes > 4*mib {
		t.Errorf("first run allocated %d MiB on NewMachine, %d MiB on a one-shot machine; want at least %d and at most 4", keptBytes/mib, oneShotBytes/mib, links)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Error("the one-shot machine's output differs from NewMachine's")
	}
}

// TestOneShotMachineRunAgainHoldsNoMore: run again and again, a one-shot
// machine keeps no more free memory after the tenth run than after the
// second, though each run's transposes (an op without UsePreallocDo)
// allocate values of their own that it lets go of: it keeps of each size
// only as many as the run's ops asked for.
func TestOneShotMachineRunAgainHoldsNoMore(t *testing.T) {
	g := gorgonia.NewGraph()
	must := graphtest.Must(t)
	x := graphtest.Param(g, "x", graphtest.RandDense(rand.New(rand.NewPCG(3, 4)), 1, 64, 64))
	y := x
	for i := range 4 {
		y = named(fmt.Sprintf("y%d", i), must(gorgonia.Add(must(gorgonia.Transpose(y)), x)))
	}
	m, err := NewOneShotMachine(g, y)
	if err != nil {
		t.Fatal(err)
	}
	held := func() int {
		n := 0
		for _, list := range m.free {
			n += len(list)
		}
		return n
	}
	var second int
	for run := 1; run <= 10; run++ {
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
		if run == 2 {
			second = held()
		}
	}
	if got := held(); got > second {
		t.Errorf("%d free tensors after 10 runs, %d after 2", got, second)
	}
}
