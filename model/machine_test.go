package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/layers"
)

// tapeMachine is the machine NewLeanMachine returned before machine: a
// TapeMachine that copies the loss, the logits and every gradient after
// each run (TraceExec on those nodes), so what they hold cannot be
// overwritten by a later op.
func (gr *Graph) tapeMachine() gorgonia.VM {
	watch := []interface{}{gr.Logits, gr.Loss}
	for _, g := range gr.grads {
		watch = append(watch, g)
	}
	return gorgonia.NewTapeMachine(gr.G, gorgonia.TraceExec(), gorgonia.WithWatchlist(watch...))
}

// TestLeanMachineMatchesTapeMachine: on both paths, attention-only and
// full blocks (and full blocks with multi-query attention and rotary
// positions), float32 and float64, with key padding and dropout masks, the
// lean machine's loss, logits and every gradient equal those of a
// TapeMachine on the same graph (built twice from one model) bit for bit,
// over five runs whose tokens, masks and weights all change, so a reused
// value that a run does not overwrite entirely would show.
func TestLeanMachineMatchesTapeMachine(t *testing.T) {
	for _, path := range layers.Paths {
		for _, c := range []struct {
			name string
			cfg  Config
		}{
			{"attention-only", testConfig(false, path)},
			{"mlp", testConfig(true, path)},
			{"mlp,mqa,rope", func() Config { c := testConfig(true, path); c.KVHeads, c.Position = 1, "rope"; return c }()},
		} {
			for _, dtype := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
				t.Run(fmt.Sprintf("%s,%s,%v", path, c.name, dtype), func(t *testing.T) {
					testLeanMatchesTape(t, c.cfg, dtype)
				})
			}
		}
	}
}

func testLeanMatchesTape(t *testing.T, cfg Config, dtype tensor.Dtype) {
	const b, tt = 3, 6
	m := randomModel(t, cfg, dtype)
	opts := BuildOptions{Batch: b, SeqLen: tt, Train: true, KeyPadding: true}
	lean, tape := mustBuild(t, m, opts), mustBuild(t, m, opts)
	leanVM, tapeVM := lean.NewLeanMachine(), tape.tapeMachine()
	defer leanVM.Close()
	defer tapeVM.Close()
	rng := rand.New(rand.NewPCG(21, 22))
	for step := 0; step < 5; step++ {
		if step > 0 {
			randomize(m, uint64(step), 0.5) // both graphs read these tensors
		}
		tokens, targets, mask := randomBatch(rng, b*tt, cfg.Vocab)
		keyMask := rng.Uint64()
		for _, g := range []*Graph{lean, tape} {
			if err := g.Feed(tokens, targets, mask); err != nil {
				t.Fatal(err)
			}
			masks := rand.New(rand.NewPCG(keyMask, 1)) // the same masks on both graphs
			fillMask(g.KeyMask.Value().(*tensor.Dense), masks, 0.25, 1)
			if err := g.DrawDropout(cfg.Dropout, masks); err != nil {
				t.Fatal(err)
			}
		}
		run(t, leanVM)
		run(t, tapeVM)
		want, got := outputBits(t, tape), outputBits(t, lean)
		if len(got) != len(want) {
			t.Fatalf("step %d: %d outputs, the TapeMachine's %d", step, len(got), len(want))
		}
		for name, w := range want {
			g := got[name]
			if len(g) != len(w) {
				t.Fatalf("step %d, %s: %d values, the TapeMachine's %d", step, name, len(g), len(w))
			}
			for i := range w {
				if g[i] != w[i] {
					t.Fatalf("step %d, %s[%d]: %v, the TapeMachine's %v", step, name, i, fromBits(g[i], dtype), fromBits(w[i], dtype))
				}
			}
		}
	}
}

// outputBits is the loss, the logits and each gradient of g's last run,
// by name, as the bits of each value in g's dtype.
func outputBits(t *testing.T, g *Graph) map[string][]uint64 {
	t.Helper()
	out := map[string][]uint64{}
	bits := func(v gorgonia.Value) []uint64 {
		switch d := v.Data().(type) {
		case float32:
			return []uint64{uint64(math.Float32bits(d))}
		case float64:
			return []uint64{math.Float64bits(d)}
		case []float32:
			b := make([]uint64, len(d))
			for i, x := range d {
				b[i] = uint64(math.Float32bits(x))
			}
			return b
		case []float64:
			b := make([]uint64, len(d))
			for i, x := range d {
				b[i] = math.Float64bits(x)
			}
			return b
		}
		t.Fatalf("unexpected %T", v.Data())
		return nil
	}
	out["loss"] = bits(g.Loss.Value())
	logits, err := g.LogitsValue()
	if err != nil {
		t.Fatal(err)
	}
	out["logits"] = bits(logits)
	grads, err := g.Gradients()
	if err != nil {
		t.Fatal(err)
	}
	for i, gr := range grads {
		out["d "+g.Model.Params[i].Name] = bits(gr)
	}
	return out
}

func fromBits(b uint64, dtype tensor.Dtype) float64 {
	if dtype == tensor.Float32 {
		return float64(math.Float32frombits(uint32(b)))
	}
	return math.Float64frombits(b)
}

// TestLeanMachineAllocs: on the gorgonia path a training run of the lean
// machine allocates fewer objects and far fewer bytes than a TapeMachine on
// the same graph (B 8, T 16, D 32, H 2, two full blocks, float32).
// Measured: 7,300 objects and 1.1 MB per run against the TapeMachine's
// 10,900 and 3.9 MB; most objects left are BatchedMatMul's views and shapes
// for each (batch, head) product. Bounds: at most 4/5 of the TapeMachine's
// objects and 1/2 of its bytes.
func TestLeanMachineAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	cfg := Config{Vocab: 11, Context: 16, DModel: 32, Heads: 2, Layers: 2, MLP: true, DFF: 64, OutBias: true, Attention: string(layers.Gorgonia)}
	m := randomModel(t, cfg, tensor.Float32)
	g := mustBuild(t, m, BuildOptions{Batch: 8, SeqLen: 16, Train: true})
	tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(5, 6)), 8*16, cfg.Vocab)
	if err := g.Feed(tokens, targets, mask); err != nil {
		t.Fatal(err)
	}
	measure := func(vm gorgonia.VM) (allocs, bytes float64) {
		defer vm.Close()
		step := func() {
			vm.Reset()
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
		}
		step()
		allocs = testing.AllocsPerRun(5, step)
		const runs = 5
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			step()
		}
		runtime.ReadMemStats(&after)
		return allocs, float64(after.TotalAlloc-before.TotalAlloc) / runs
	}
	leanAllocs, leanBytes := measure(g.NewLeanMachine())
	tapeAllocs, tapeBytes := measure(g.tapeMachine())
	t.Logf("per run: lean machine %.0f allocations, %.0f bytes; TapeMachine %.0f allocations, %.0f bytes", leanAllocs, leanBytes, tapeAllocs, tapeBytes)
	if leanAllocs > tapeAllocs*4/5 {
		t.Errorf("the lean machine allocates %.0f objects per run, more than 4/5 of the TapeMachine's %.0f", leanAllocs, tapeAllocs)
	}
	if leanBytes > tapeBytes/2 {
		t.Errorf("the lean machine allocates %.0f bytes per run, more than half the TapeMachine's %.0f", leanBytes, tapeBytes)
	}
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
// op whose previous value the failed run had half used.
func TestMachineRunsAgainAfterError(t *testing.T) {
	g := gorgonia.NewGraph()
	must := graphtest.Must(t)
	xv := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))
	wv := tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{1, 0, -1, 2, 0.5, 1}))
	x := graphtest.Param(g, "x", xv)
	w := graphtest.Param(g, "w", wv)
	y := must(layers.NameAs("y")(gorgonia.Mul(x, w)))
	z := must(layers.NameAs("z")(gorgonia.Add(y, y)))
	vm, err := newMachine(g, z)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{2 * (1 - 2 + 1.5), 2 * (4 + 3), 2 * (4 - 5 + 3), 2 * (10 + 6)}
	check := func() {
		t.Helper()
		if got := z.Value().Data().([]float64); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("z = %v, want %v", got, want)
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
	out := must(layers.NameAs("out")(gorgonia.BroadcastAdd(a, bias, nil, []byte{0}))) // (1, 3)
	vm, err := newMachine(g, out)
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

// BenchmarkLeanMachine times one float32 training run (forward and
// backward, no optimizer) of the lean machine and of a TapeMachine on the
// same graph, at cmd/bench's sizes S (B32 T12 D32 H4, one attention-only
// layer) and L4 (B16 T64 D128 H8, four full blocks), on each path. It
// reports the process's CPU time per run beside the wall time: on a shared
// machine the CPU time varies less.
func BenchmarkLeanMachine(b *testing.B) {
	for _, s := range []struct {
		name string
		cfg  Config
		b, t int
	}{
		{"S", Config{Vocab: 64, Context: 12, DModel: 32, Heads: 4, Layers: 1, OutBias: true}, 32, 12},
		{"L4", Config{Vocab: 64, Context: 64, DModel: 128, Heads: 8, Layers: 4, MLP: true, DFF: 512, OutBias: true}, 16, 64},
	} {
		for _, path := range layers.Paths {
			for _, lean := range []bool{true, false} {
				name := s.name + "/" + string(path) + "/tape"
				if lean {
					name = s.name + "/" + string(path) + "/lean"
				}
				b.Run(name, func(b *testing.B) {
					cfg := s.cfg
					cfg.Attention = string(path)
					m, err := New(cfg, tensor.Float32, 1)
					if err != nil {
						b.Fatal(err)
					}
					g, err := Build(m, BuildOptions{Batch: s.b, SeqLen: s.t, Train: true})
					if err != nil {
						b.Fatal(err)
					}
					tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(1, 1)), s.b*s.t, cfg.Vocab)
					if err := g.Feed(tokens, targets, mask); err != nil {
						b.Fatal(err)
					}
					vm := g.tapeMachine()
					if lean {
						vm = g.NewLeanMachine()
					}
					defer vm.Close()
					step := func() {
						vm.Reset()
						if err := vm.RunAll(); err != nil {
							b.Fatal(err)
						}
					}
					step()
					b.ReportAllocs()
					b.ResetTimer()
					cpu := cpuTime()
					for range b.N {
						step()
					}
					b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
				})
			}
		}
	}
}

// cpuTime is the user + system time of this process so far, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
