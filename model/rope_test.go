package model

import (
	"encoding/json"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/layers"
)

// The PyTorch fixtures of the position and shape keys (gen_fixtures.py,
// written from transformers' modeling_rope_utils), held by
// TestBuildMatchesPyTorch on both paths: logits, attention and every
// gradient.
func init() {
	torchFixtures = append(torchFixtures, "rope_llama3_partial_head_dim", "rope_local_global")
}

// ropeVariants are the reference's cases of the position and shape keys:
// head_dim apart from d_model/heads (with QK-norm and grouped-query heads),
// llama3 and linear scaling, partial rotary, and local/global layers with
// their own rope base, each with a window or positions past the scaling's
// bands so that every part moves the logits.
func ropeVariants() map[string]Config {
	llama3 := Config{Vocab: 11, Context: 9, DModel: 12, Heads: 2, Layers: 2, MLP: true, DFF: 16, Position: PositionRope,
		RopeBase: 100, HeadDim: 8, RotaryDimsKey: 6, RopeScaling: RopeScalingLlama3, RopeFactor: 8,
		RopeLowFreqFactor: 1, RopeHighFreqFactor: 4, RopeOriginalContext: 64, QKVBias: true}
	return map[string]Config{
		"head_dim+qk_norm+gqa+mlp": {Vocab: 11, Context: 9, DModel: 16, Heads: 4, Layers: 2, MLP: true, DFF: 24, Position: PositionRope,
			HeadDim: 6, KVHeads: 2, QKNorm: true, OutBias: true},
		"rope llama3+partial+head_dim": llama3,
		"rope linear+mqa":              {Vocab: 11, Context: 9, DModel: 12, Heads: 3, Layers: 2, Position: PositionRope, KVHeads: 1, RopeScaling: RopeScalingLinear, RopeFactor: 4},
		"local/global+local rope base": {Vocab: 11, Context: 9, DModel: 8, Heads: 2, Layers: 3, Position: PositionRope, RopeBase: 1000,
			RopeScaling: RopeScalingLinear, RopeFactor: 4, Window: 2, GlobalLayers: NewLayerList(1), LocalRopeBase: 10, QKVBias: true},
		"local/global alibi+mlp": {Vocab: 11, Context: 9, DModel: 8, Heads: 2, Layers: 2, MLP: true, DFF: 16, Position: PositionALiBi,
			Window: 3, GlobalLayers: NewLayerList(0)},
	}
}

// TestLlama3FrequenciesFollowTransformers: Llama 3.1's rope parameters
// (theta 500000, head 128, factor 8, low 1, high 4, original 8192) give
// the three bands of transformers' _compute_llama3_parameters: the short
// wavelengths kept, the long ones divided by 8, and those between blended,
// each checked against the rule written out here.
func TestLlama3FrequenciesFollowTransformers(t *testing.T) {
	c := Config{Vocab: 4, Context: 4, DModel: 256, Heads: 2, Layers: 1, Position: PositionRope, RopeBase: 500000,
		RopeScaling: RopeScalingLlama3, RopeFactor: 8, RopeLowFreqFactor: 1, RopeHighFreqFactor: 4, RopeOriginalContext: 8192}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	got := c.RopeFrequencies(0)
	if len(got) != 64 {
		t.Fatalf("%d frequencies, want 64", len(got))
	}
	bands := map[string]int{}
	for i, f := range got {
		plain := math.Pow(500000, -float64(2*i)/128)
		wavelength := 2 * math.Pi / plain
		want, band := plain, "kept"
		switch {
		case wavelength > 8192:
			want, band = plain/8, "divided"
		case wavelength >= 2048:
			s := (8192/wavelength - 1) / 3
			want, band = (1-s)*plain/8+s*plain, "blended"
		}
		bands[band]++
		if math.Abs(f-want) > 1e-15*want {
			t.Errorf("pair %d (%s): %v, want %v", i, band, f, want)
		}
	}
	if bands["kept"] == 0 || bands["divided"] == 0 || bands["blended"] == 0 {
		t.Errorf("bands %v: want pairs in each", bands)
	}
}

// TestRopeKeysValidate: each key's bad values and combinations are refused
// with one line naming the key, the value and what is allowed.
func TestRopeKeysValidate(t *testing.T) {
	base := Config{Vocab: 5, Context: 4, DModel: 8, Heads: 2, Layers: 2, Position: PositionRope}
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"negative head_dim", func(c *Config) { c.HeadDim = -1 }, "model.head_dim = -1: must be 0 (d_model/heads) or positive"},
		{"head_dim with latent", func(c *Config) { c.Position, c.HeadDim, c.KVLatent = "", 4, 4 }, "model.head_dim = 4 with model.kv_latent = 4"},
		{"odd head_dim with rope", func(c *Config) { c.HeadDim = 5 }, "model.position = rope needs an even head size (channel i pairs with i+d/2): model.head_dim = 5"},
		{"yarn", func(c *Config) { c.RopeScaling, c.RopeFactor = "yarn", 2 }, `model.rope_scaling = "yarn": want linear or llama3 (yarn, dynamic and longrope are not built)`},
		{"scaling without rope", func(c *Config) { c.Position, c.RopeScaling, c.RopeFactor = PositionALiBi, "linear", 2 }, "model.rope_scaling = linear is only used with model.position = rope (it is alibi)"},
		{"factor without scaling", func(c *Config) { c.RopeFactor = 2 }, "model.rope_factor = 2 is only used with model.rope_scaling linear or llama3"},
		{"linear without factor", func(c *Config) { c.RopeScaling = "linear" }, "model.rope_factor = 0: model.rope_scaling = linear needs a finite factor > 0"},
		{"llama3 keys with linear", func(c *Config) { c.RopeScaling, c.RopeFactor, c.RopeOriginalContext = "linear", 2, 64 }, "are only used with model.rope_scaling = llama3"},
		{"llama3 low above high", func(c *Config) {
			c.RopeScaling, c.RopeFactor, c.RopeLowFreqFactor, c.RopeHighFreqFactor, c.RopeOriginalContext = "llama3", 8, 4, 1, 64
		}, "llama3 scaling needs 0 < low < high"},
		{"llama3 without context", func(c *Config) {
			c.RopeScaling, c.RopeFactor, c.RopeLowFreqFactor, c.RopeHighFreqFactor = "llama3", 8, 1, 4
		}, "model.rope_original_context = 0: llama3 scaling needs the original context length"},
		{"odd rotary_dims", func(c *Config) { c.RotaryDimsKey = 3 }, "model.rotary_dims = 3: want 0 (the whole head) or an even number up to the head size 4"},
		{"rotary_dims past the head", func(c *Config) { c.RotaryDimsKey = 6 }, "model.rotary_dims = 6"},
		{"rotary_dims without rope", func(c *Config) { c.Position, c.RotaryDimsKey = PositionALiBi, 2 }, "model.rotary_dims = 2 is only used with model.position = rope"},
		{"global_layers without window", func(c *Config) { c.GlobalLayers = NewLayerList(1) }, "model.global_layers = [1] is only used with model.window > 0"},
		{"global_layers with a negative window", func(c *Config) { c.Window, c.GlobalLayers = -2, NewLayerList(0) }, "model.window = -2: must be 0 (full) or positive"},
		{"global layer past the model", func(c *Config) { c.Window, c.GlobalLayers = 2, NewLayerList(0, 2) }, "model.global_layers: layer 2 is not one of the 2 layers (0 to 1)"},
		{"local base without global layers", func(c *Config) { c.Window, c.LocalRopeBase = 2, 10 }, "model.local_rope_base = 10 is only used with model.position = rope and model.global_layers set"},
		{"local base at 1", func(c *Config) { c.Window, c.GlobalLayers, c.LocalRopeBase = 2, NewLayerList(1), 1 }, "model.local_rope_base = 1: must be finite and > 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%v, want one line containing %q", err, tc.want)
			}
		})
	}
}

// TestHeadDimShapes: with head_dim set the checkpoint's attention tensors
// are qkv (H·d + 2·G·d, D), out (D, H·d), q_norm and k_norm (d), and a
// model of them builds on both paths with head outputs (B, H, T, d).
func TestHeadDimShapes(t *testing.T) {
	c := Config{Vocab: 5, Context: 4, DModel: 8, Heads: 4, KVHeads: 2, HeadDim: 6, Layers: 1, Position: PositionRope, QKNorm: true}
	want := map[string][]int{"blocks.0.attn.qkv.weight": {4*6 + 2*2*6, 8}, "blocks.0.attn.out.weight": {8, 4 * 6}, "blocks.0.attn.q_norm.weight": {6}}
	for _, s := range c.ParamSpecs() {
		if w, ok := want[s.Name]; ok && !slicesEqual(s.Shape, w) {
			t.Errorf("%s: shape %v, want %v", s.Name, s.Shape, w)
		}
	}
	if got := c.KVPerToken(); got != 2*2*6 {
		t.Errorf("KVPerToken %d, want %d", got, 2*2*6)
	}
	eachPath(t, func(t *testing.T, path layers.Path) {
		c.Attention = string(path)
		m, err := New(c, tensor.Float64, 1)
		if err != nil {
			t.Fatal(err)
		}
		g, err := Build(m, BuildOptions{Batch: 2, SeqLen: 3, Cache: []string{HeadOut(0)}})
		if err != nil {
			t.Fatal(err)
		}
		if s := g.Activations[HeadOut(0)].Shape(); !slicesEqual(s, []int{2, 4, 3, 6}) {
			t.Errorf("head outputs %v, want (2, 4, 3, 6)", s)
		}
	})
}

func slicesEqual[S ~[]int](a S, b []int) bool { return slices.Equal([]int(a), b) }

// TestGlobalLayersReadAsAList: global_layers is a JSON list, read back into
// the same comparable Config.
func TestGlobalLayersReadAsAList(t *testing.T) {
	c := Config{Vocab: 5, Context: 4, DModel: 8, Heads: 2, Layers: 4, Window: 2, GlobalLayers: NewLayerList(3, 1)}
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"global_layers":[1,3]`) {
		t.Errorf("JSON %s: want global_layers [1,3]", raw)
	}
	var back Config
	if err := json.Unmarshal(raw, &back); err != nil || back != c {
		t.Errorf("read back %+v (%v), want %+v", back, err, c)
	}
	if c.LayerWindow(1) != 0 || c.LayerWindow(2) != 2 {
		t.Errorf("windows of layers 1, 2: %d, %d; want 0, 2", c.LayerWindow(1), c.LayerWindow(2))
	}
}

// TestRopeGradientsMatchCentralDifferences: on both paths, every entry of
// every parameter gradient of a model with each position and shape key
// equals the central difference (L(w+h) - L(w-h)) / 2h, h = 1e-5, of the
// graph's own float64 loss (whose forward TestBuildMatchesPyTorch and
// TestReferenceIsTheOracle hold to independent ones). Tolerance: per
// tensor, ||g - fd|| / max(||g||, ||fd||) < 1e-6, weights random at std 0.5.
func TestRopeGradientsMatchCentralDifferences(t *testing.T) {
	configs := map[string]Config{
		"llama3+partial+head_dim+gqa": {Vocab: 5, Context: 4, DModel: 6, Heads: 2, KVHeads: 1, HeadDim: 6, Layers: 1, MLP: true, DFF: 5,
			Position: PositionRope, RotaryDimsKey: 4, RopeBase: 100, RopeScaling: RopeScalingLlama3, RopeFactor: 8,
			RopeLowFreqFactor: 1, RopeHighFreqFactor: 4, RopeOriginalContext: 16, QKVBias: true},
		"local/global+local base+linear": {Vocab: 5, Context: 4, DModel: 4, Heads: 2, Layers: 2, Position: PositionRope, RopeBase: 1000,
			RopeScaling: RopeScalingLinear, RopeFactor: 3, Window: 2, GlobalLayers: NewLayerList(0), LocalRopeBase: 10, OutBias: true},
	}
	eachPath(t, func(t *testing.T, path layers.Path) {
		for _, name := range slices.Sorted(maps.Keys(configs)) {
			t.Run(name, func(t *testing.T) {
				cfg := configs[name]
				cfg.Attention = string(path)
				m, err := New(cfg, tensor.Float64, 3)
				if err != nil {
					t.Fatal(err)
				}
				randomize(m, 11, 0.5)
				const b, T = 2, 4
				g, err := Build(m, BuildOptions{Batch: b, SeqLen: T, Train: true})
				if err != nil {
					t.Fatal(err)
				}
				tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(7, 8)), b*T, cfg.Vocab)
				if err := g.Feed(tokens, targets, mask); err != nil {
					t.Fatal(err)
				}
				vm := g.NewMachine()
				defer vm.Close()
				run(t, vm)
				grads, err := g.Gradients()
				if err != nil {
					t.Fatal(err)
				}
				saved := make([][]float64, len(grads))
				for i, gr := range grads {
					saved[i] = append([]float64(nil), gr.Float64s()...)
				}
				loss := func() float64 { run(t, vm); return lossOf(t, g) }
				const h = 1e-5
				for i, p := range m.Params {
					var diff, gn, fn float64
					for j, gj := range saved[i] {
						w := at(p.Value, j)
						graphtest.Set(p.Value, j, w+h)
						up := loss()
						graphtest.Set(p.Value, j, w-h)
						down := loss()
						graphtest.Set(p.Value, j, w)
						fd := (up - down) / (2 * h)
						diff, gn, fn = diff+(gj-fd)*(gj-fd), gn+gj*gj, fn+fd*fd
					}
					if rel := math.Sqrt(diff) / math.Max(math.Sqrt(math.Max(gn, fn)), 1e-300); !(rel < 1e-6) {
						t.Errorf("%s: relative gradient error %.3g (|g| %.3g, |fd| %.3g)", p.Name, rel, math.Sqrt(gn), math.Sqrt(fn))
					}
				}
			})
		}
	})
}

// TestHeadDimMemory: the estimates count the attention at H·d: the weights
// (qkv (H·d + 2·G·d) × D, out D × H·d) and the activations grow when
// head_dim is twice d_model/heads, and equal today's when it is d_model/heads.
func TestHeadDimMemory(t *testing.T) {
	plain := Config{Vocab: 10, Context: 8, DModel: 8, Heads: 2, Layers: 1, Position: PositionRope}
	same, wide := plain, plain
	same.HeadDim, wide.HeadDim = 4, 8
	emb := 10.0 * 8 * 2 // tok_emb and lm_head
	if got, want := wide.ParamCount(), emb+(2+2*2)*8*8+8*2*8; got != want {
		t.Errorf("ParamCount %v, want %v", got, want)
	}
	if same.EstimateBytes(4, 4) != plain.EstimateBytes(4, 4) || !(wide.EstimateBytes(4, 4) > plain.EstimateBytes(4, 4)) {
		t.Errorf("EstimateBytes: head_dim 4 %v, 8 %v, unset %v: want the first equal, the second larger",
			same.EstimateBytes(4, 4), wide.EstimateBytes(4, 4), plain.EstimateBytes(4, 4))
	}
	decode := func(c Config) float64 { return (&Model{Config: c, Dtype: tensor.Float32}).DecodeBytes(1, 8) }
	if !(decode(wide) > decode(plain)) || decode(same) != decode(plain) {
		t.Errorf("DecodeBytes: head_dim 8 %v, 4 %v, unset %v", decode(wide), decode(same), decode(plain))
	}
}

// TestRopeFamilyWords: the model card names each key that is set, and
// nothing for a config that sets none.
func TestRopeFamilyWords(t *testing.T) {
	c := Config{Vocab: 5, Context: 4, DModel: 8, Heads: 2, Layers: 6, Position: PositionRope, HeadDim: 16, RotaryDimsKey: 8,
		RopeScaling: RopeScalingLlama3, RopeFactor: 8, RopeLowFreqFactor: 1, RopeHighFreqFactor: 4, RopeOriginalContext: 64,
		Window: 4, GlobalLayers: NewLayerList(5), LocalRopeBase: 10000}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	got := c.Family()
	for _, want := range []string{"head_dim 16", "llama3 rope scaling x8", "rotary on 8 of 16 channels", "local/global 5:1 with window 4 (layer 5 global)", "base 10000 global, 10000 local"} {
		if !strings.Contains(got, want) {
			t.Errorf("Family() = %q: no %q", got, want)
		}
	}
	plain := Config{Vocab: 5, Context: 4, DModel: 8, Heads: 2, Layers: 6, Position: PositionRope}
	if got := plain.Family(); got != "rope positions (base 10000)" {
		t.Errorf("Family() without the keys = %q", got)
	}
}

// TestHeadDimShapeWords: a checkpoint tensor of the wrong shape under
// head_dim names the keys that give the dimension.
func TestHeadDimShapeWords(t *testing.T) {
	c := Config{Vocab: 5, Context: 4, DModel: 8, Heads: 2, KVHeads: 1, HeadDim: 6, Layers: 1, QKNorm: true}
	want := map[string]struct {
		got  []int
		word string
	}{
		"blocks.0.attn.qkv.weight":    {[]int{16, 8}, "(dim 0 is (model.heads+2*model.kv_heads)*model.head_dim=24)"},
		"blocks.0.attn.out.weight":    {[]int{8, 8}, "(dim 1 is model.heads*model.head_dim=12)"},
		"blocks.0.attn.q_norm.weight": {[]int{4}, "(dim 0 is model.head_dim=6)"},
	}
	for _, spec := range c.ParamSpecs() {
		if w, ok := want[spec.Name]; ok {
			if got := explainShape(c, spec, w.got); got != " "+w.word {
				t.Errorf("%s %v: %q, want %q", spec.Name, w.got, got, " "+w.word)
			}
		}
	}
}
