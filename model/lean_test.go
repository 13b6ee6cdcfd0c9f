package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/engine"
	"github.com/attnscope/attnscope/layers"
)

// tapeMachine is the machine NewLeanMachine returned before engine.Machine: a
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
	eachMachineCase(t, []string{"attention-only", "mlp", "mlp,mqa,rope"}, testLeanMatchesTape)
}

// machineCases are the models the machine tests run, by name, on a path.
var machineCases = map[string]func(path layers.Path) Config{
	"attention-only": func(path layers.Path) Config { return testConfig(false, path) },
	"mlp":            func(path layers.Path) Config { return testConfig(true, path) },
	"mlp,mqa,rope": func(path layers.Path) Config {
		c := testConfig(true, path)
		c.KVHeads, c.Position = 1, "rope"
		return c
	},
}

// eachMachineCase runs test on every path, each named machine case and
// both dtypes.
func eachMachineCase(t *testing.T, names []string, test func(*testing.T, Config, tensor.Dtype)) {
	for _, path := range layers.Paths {
		for _, name := range names {
			for _, dtype := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
				t.Run(fmt.Sprintf("%s,%s,%v", path, name, dtype), func(t *testing.T) {
					test(t, machineCases[name](path), dtype)
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
		sameBits(t, fmt.Sprintf("step %d", step), "the TapeMachine's", outputBits(t, lean), outputBits(t, tape), dtype)
	}
}

// sameBits fails the test at the first value of got that differs from
// want's (theirs names want in the message).
func sameBits(t *testing.T, what, theirs string, got, want map[string][]uint64, dtype tensor.Dtype) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d outputs, %s %d", what, len(got), theirs, len(want))
	}
	for name, w := range want {
		g := got[name]
		if len(g) != len(w) {
			t.Fatalf("%s, %s: %d values, %s %d", what, name, len(g), theirs, len(w))
		}
		for i := range w {
			if g[i] != w[i] {
				t.Fatalf("%s, %s[%d]: %v, %s %v", what, name, i, fromBits(g[i], dtype), theirs, fromBits(w[i], dtype))
			}
		}
	}
}

// TestOneShotMachineMatchesLeanMachine: on both paths, attention-only and
// full blocks (with multi-query attention and rotary positions), float32
// and float64, a one-shot machine's loss, logits and every activation kept
// (each layer's attention weights, head outputs and residual streams)
// equal the lean machine's bit for bit, on its first run and on a second
// over other tokens, while it holds no other op node's value after a run:
// it let go of each once read, and handed its memory on to later ops.
func TestOneShotMachineMatchesLeanMachine(t *testing.T) {
	eachMachineCase(t, []string{"attention-only", "mlp,mqa,rope"}, testOneShotMatchesLean)
}

func testOneShotMatchesLean(t *testing.T, cfg Config, dtype tensor.Dtype) {
	const b, tt = 2, 6
	m := randomModel(t, cfg, dtype)
	opts := BuildOptions{Batch: b, SeqLen: tt}
	opts.Cache = mustBuild(t, m, opts).ActivationNames()
	opts.Cache = opts.Cache[:len(opts.Cache)-1] // the logits are read as such
	lean, oneShot := mustBuild(t, m, opts), mustBuild(t, m, opts)
	leanVM, oneShotVM := lean.NewLeanMachine(), oneShot.NewOneShotMachine()
	defer leanVM.Close()
	defer oneShotVM.Close()
	rng := rand.New(rand.NewPCG(23, 24))
	for run := range 2 {
		tokens, targets, mask := randomBatch(rng, b*tt, cfg.Vocab)
		for _, g := range []*Graph{lean, oneShot} {
			if err := g.Feed(tokens, targets, mask); err != nil {
				t.Fatal(err)
			}
		}
		for _, vm := range []gorgonia.VM{leanVM, oneShotVM} {
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
		}
		sameBits(t, fmt.Sprintf("run %d", run), "the lean machine's", inferenceBits(t, oneShot), inferenceBits(t, lean), dtype)
		kept := map[*gorgonia.Node]bool{}
		for _, n := range oneShot.outputs() {
			kept[n] = true
		}
		for _, n := range oneShot.G.AllNodes() {
			if v := oneShotVM.(*engine.Machine).Value(n); n.Op() != nil && !kept[n] && v != nil {
				t.Fatalf("run %d: the one-shot machine still holds the value of %s, read by no op after the run", run, n.Name())
			}
		}
	}
}

// outputBits is the loss, the logits and each gradient of g's last run,
// by name, as the bits of each value in g's dtype.
func outputBits(t *testing.T, g *Graph) map[string][]uint64 {
	t.Helper()
	out := inferenceBits(t, g)
	grads, err := g.Gradients()
	if err != nil {
		t.Fatal(err)
	}
	for i, gr := range grads {
		out["d "+g.Model.Params[i].Name] = valueBits(t, gr)
	}
	return out
}

// inferenceBits is the loss, the logits and every cached activation of
// g's last run, by name, as outputBits has them.
func inferenceBits(t *testing.T, g *Graph) map[string][]uint64 {
	t.Helper()
	out := map[string][]uint64{"loss": valueBits(t, g.Loss.Value())}
	logits, err := g.LogitsValue()
	if err != nil {
		t.Fatal(err)
	}
	out["logits"] = valueBits(t, logits)
	for _, name := range g.Opts.Cache {
		v, err := g.Activation(name)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = valueBits(t, v)
	}
	return out
}

// valueBits is v's values as the bits of each in its dtype.
func valueBits(t *testing.T, v gorgonia.Value) []uint64 {
	t.Helper()
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
