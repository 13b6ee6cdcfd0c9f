package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/layers"
)

// hookFixtures are the PyTorch fixtures' configurations the hook tests
// run on: GPT-2's and Llama's blocks, ALiBi with a window and one kv head,
// Gemma 2's soft-caps and sandwich norms, GPT-NeoX's parallel residual,
// latent attention.
var hookFixtures = []string{"mlp_2layer", "llama_style", "alibi_mqa_window", "gemma2_scores", "neox_parallel", "mla_none"}

// logitBits are g's logits as float64 bit patterns.
func logitBits(t *testing.T, g *Graph) []uint64 {
	t.Helper()
	var bits []uint64
	for _, v := range floats(t, g.Logits) {
		bits = append(bits, math.Float64bits(v))
	}
	return bits
}

func equalBits(t *testing.T, what string, got, want []uint64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d logits, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: logit %d is %v, want %v", what, i, math.Float64frombits(got[i]), math.Float64frombits(want[i]))
		}
	}
}

// TestIdentityHooksLeaveLogitsBitIdentical: a function at every
// activation that returns its input (or a copy of it) leaves the logits
// bit for bit, on both paths, float32 and float64: hooked at every
// activation a plain forward computes, against a plain graph; hooked at
// every activation ("*"), against a graph that caches every one (whose
// fused path builds the same on-demand nodes).
func TestIdentityHooksLeaveLogitsBitIdentical(t *testing.T) {
	identity := func(_ string, x *tensor.Dense) (*tensor.Dense, error) { return x, nil }
	clone := func(_ string, x *tensor.Dense) (*tensor.Dense, error) { return x.Clone().(*tensor.Dense), nil }
	for _, name := range hookFixtures {
		for _, dtype := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			m := torchModel(t, loadTorchFixture(t, name), dtype)
			var computed []string
			for _, s := range m.Config.Activations(2, 4) {
				if !s.OnDemand {
					computed = append(computed, s.Name)
				}
			}
			for _, path := range layers.Paths {
				t.Run(name+"/"+dtype.String()+"/"+string(path), func(t *testing.T) {
					plain := logitBits(t, runHooked(t, m, path, BuildOptions{}, nil))
					equalBits(t, "identity hooks", logitBits(t, runHooked(t, m, path, BuildOptions{Hooks: computed}, identity)), plain)
					cached := logitBits(t, runHooked(t, m, path, BuildOptions{Cache: []string{"*"}}, nil))
					equalBits(t, "identity hooks everywhere", logitBits(t, runHooked(t, m, path, BuildOptions{Hooks: []string{"*"}}, identity)), cached)
					equalBits(t, "hooks returning copies", logitBits(t, runHooked(t, m, path, BuildOptions{Hooks: []string{"*"}}, clone)), cached)
				})
			}
		}
	}
}

// runHooked builds m's graph of 2 rows of 4 positions on path with opts,
// sets fn at every hooked activation, and runs it on one random batch.
func runHooked(t *testing.T, m *Model, path layers.Path, opts BuildOptions, fn HookFunc) *Graph {
	t.Helper()
	onPath := *m
	onPath.Config.Attention = string(path)
	opts.Batch, opts.SeqLen = 2, 4
	g, err := Build(&onPath, opts)
	if err != nil {
		t.Fatal(err)
	}
	if fn != nil {
		if err := g.SetHook("*", fn); err != nil {
			t.Fatal(err)
		}
	}
	tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(7, 7)), 8, m.Config.Vocab)
	feedRun(t, g, tokens, targets, mask)
	return g
}

// TestHooksReplace: what a function returns is what the ops downstream
// read, on both paths (float64): zeroing block 0's mlp_out leaves
// resid_post equal to resid_mid; zeroing head 1's result in every block
// gives the logits of zeroing its head_out (the out projection is linear
// in each head); hiding key 0 from every query past 0 in the scores
// (-Inf) zeroes its weight and moves the logits.
func TestHooksReplace(t *testing.T) {
	m := torchModel(t, loadTorchFixture(t, "mlp_2layer"), tensor.Float64)
	zero := func(_ string, x *tensor.Dense) (*tensor.Dense, error) {
		return tensor.New(tensor.WithShape(x.Shape().Clone()...), tensor.Of(x.Dtype())), nil
	}
	eachPath(t, func(t *testing.T, path layers.Path) {
		g := runHooked(t, m, path, BuildOptions{Hooks: []string{"blocks.0.hook_mlp_out"}, Cache: []string{"blocks.0.resid_*"}}, zero)
		within(t, "resid_post with mlp_out zeroed", activation(t, g, ResidPost(0)), activation(t, g, ResidMid(0)), 0)

		headZero := func(h int) HookFunc {
			return func(_ string, x *tensor.Dense) (*tensor.Dense, error) {
				v, s := x.Float64s(), x.Shape() // (H, B, T, D) for result, (B, H, T, d) for head_out
				for i := range v {
					if x.Dims() == 4 && s[0] == 2 && s[3] == m.Config.DModel && i/(s[1]*s[2]*s[3]) == h ||
						s[3] != m.Config.DModel && i/(s[2]*s[3])%s[1] == h {
						v[i] = 0
					}
				}
				return x, nil
			}
		}
		viaResult := runHooked(t, m, path, BuildOptions{Hooks: []string{"blocks.*.attn.hook_result"}}, headZero(1))
		viaZ := runHooked(t, m, path, BuildOptions{Hooks: []string{"blocks.*.attn.hook_z"}}, headZero(1))
		plain := runHooked(t, m, path, BuildOptions{}, nil)
		within(t, "head 1's result zeroed against its z zeroed", floats(t, viaResult.Logits), floats(t, viaZ.Logits), 1e-12)
		if moved := maxDiff(floats(t, viaZ.Logits), floats(t, plain.Logits)); moved < 1e-3 {
			t.Errorf("zeroing head 1 moved the logits by %g", moved)
		}

		hide := func(_ string, x *tensor.Dense) (*tensor.Dense, error) {
			v, tt := x.Float64s(), x.Shape()[3]
			for r := range len(v) / tt {
				if r%tt > 0 {
					v[r*tt] = math.Inf(-1)
				}
			}
			return x, nil
		}
		hidden := runHooked(t, m, path, BuildOptions{Hooks: []string{"blocks.0.attn.scores"}, Cache: []string{"blocks.0.attn.weights"}}, hide)
		w := activation(t, hidden, AttnWeights(0))
		for r := range len(w) / 4 {
			if r%4 > 0 && w[r*4] != 0 {
				t.Fatalf("query %d's weight on key 0 is %v with its score -Inf", r%4, w[r*4])
			}
		}
		if moved := maxDiff(floats(t, hidden.Logits), floats(t, plain.Logits)); moved < 1e-3 {
			t.Errorf("hiding key 0 moved the logits by %g", moved)
		}
	})
}

func maxDiff(a, b []float64) float64 {
	worst := 0.0
	for i := range a {
		worst = math.Max(worst, math.Abs(a[i]-b[i]))
	}
	return worst
}

// TestHookFuncErrors: a function's error and a replacement of another
// shape stop the run with a one-line error naming the activation; a hook
// on an activation the graph was not built to hook, or that it has not, is
// refused.
func TestHookFuncErrors(t *testing.T) {
	m := torchModel(t, loadTorchFixture(t, "mlp_2layer"), tensor.Float64)
	g, err := Build(m, BuildOptions{Batch: 1, SeqLen: 3, Hooks: []string{"blocks.1.hook_resid_mid"}})
	if err != nil {
		t.Fatal(err)
	}
	run := func() error {
		if err := g.Feed([]int{1, 2, 3}, []int{1, 2, 3}, []float64{1, 1, 1}); err != nil {
			t.Fatal(err)
		}
		vm := g.NewMachine()
		defer vm.Close()
		return vm.RunAll()
	}
	for _, c := range []struct {
		fn   HookFunc
		want string
	}{
		{func(string, *tensor.Dense) (*tensor.Dense, error) { return nil, errors.New("no patch for this row") },
			"hook at blocks.1.resid_mid: no patch for this row"},
		{func(string, *tensor.Dense) (*tensor.Dense, error) {
			return tensor.New(tensor.WithShape(2, 2), tensor.Of(tensor.Float64)), nil
		},
			"hook at blocks.1.resid_mid: returned float64 (2, 2), want the activation's float64 (3, 16)"},
	} {
		if err := g.SetHook("blocks.1.resid_mid", c.fn); err != nil {
			t.Fatal(err)
		}
		if err := run(); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("run: %v, want an error with %q", err, c.want)
		}
	}
	if err := g.SetHook(ResidMid(0), nil); err == nil || !strings.Contains(err.Error(), "hook blocks.0.resid_mid: the graph was built without it in BuildOptions.Hooks") {
		t.Errorf("SetHook on an activation not hooked: %v", err)
	}
	if err := g.SetHook("blocks.7.hook_resid_mid", nil); err == nil || !strings.Contains(err.Error(), `no activation "blocks.7.hook_resid_mid": the graph has tok_emb, pos_emb, blocks.N.{resid_pre, ln1.scale`) {
		t.Errorf("SetHook on an activation the graph has not: %v", err)
	}
	if _, err := Build(m, BuildOptions{Batch: 1, SeqLen: 3, Cache: []string{"blocks.[0"}}); err == nil || !strings.Contains(err.Error(), `activation glob "blocks.[0"`) {
		t.Errorf("a malformed glob: %v", err)
	}
}

// TestHooksOnEveryMachine: a graph hooked at every activation, each
// function scaling its activation by 1.5, gives the same logits and
// cached activations bit for bit on the TapeMachine, the lean machine and
// the one-shot machine (which hands released buffers on), two runs each.
func TestHooksOnEveryMachine(t *testing.T) {
	m := torchModel(t, loadTorchFixture(t, "llama_style"), tensor.Float32)
	scale := func(_ string, x *tensor.Dense) (*tensor.Dense, error) {
		v := x.Float32s()
		for i := range v {
			v[i] *= 1.5
		}
		return x, nil
	}
	tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(7, 7)), 8, m.Config.Vocab)
	var want []float64
	for _, machine := range []string{"tape", "lean", "one-shot"} {
		g, err := Build(m, BuildOptions{Batch: 2, SeqLen: 4, Hooks: []string{"*"}, Cache: []string{"blocks.1.*"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.SetHook("*", scale); err != nil {
			t.Fatal(err)
		}
		if err := g.Feed(tokens, targets, mask); err != nil {
			t.Fatal(err)
		}
		vm := map[string]func() gorgonia.VM{"tape": g.NewMachine, "lean": g.NewLeanMachine, "one-shot": g.NewOneShotMachine}[machine]()
		for run := range 2 {
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			logits, err := g.LogitsValue()
			if err != nil {
				t.Fatal(err)
			}
			got := toFloat64s(logits)
			for _, name := range g.Opts.Cache {
				got = append(got, activation(t, g, name)...)
			}
			vm.Reset()
			if want == nil {
				want = got
				continue
			}
			within(t, machine+" run "+string(rune('1'+run)), got, want, 0)
		}
		vm.Close()
	}
}
