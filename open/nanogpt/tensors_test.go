package nanogpt

import (
	"math"
	"strings"
	"testing"

	"github.com/nlpodyssey/gopickle/types"
)

func tuple(v ...any) *types.Tuple { return types.NewTupleFromSlice(v) }

// TestRebuildTensor: a view must lie inside its storage and be contiguous
// to be read, so that no size or stride in a pickle makes an allocation
// larger than the storage's zip entry.
func TestRebuildTensor(t *testing.T) {
	s := &storage{key: "0", typ: floatStorage, numel: 12}
	cases := []struct {
		name                 string
		offset               int
		size, stride         *types.Tuple
		wantErr, wantRefusal string // from rebuildTensor, then from readable
	}{
		{"the whole storage", 0, tuple(3, 4), tuple(4, 1), "", ""},
		{"a row inside it", 8, tuple(1, 4), tuple(4, 1), "", ""},
		{"one element past the end", 1, tuple(3, 4), tuple(4, 1), "reaches past storage \"0\" of 12 elements", ""},
		{"an offset past the end of an empty view", 99, tuple(0, 4), tuple(4, 1), "", ""},
		{"a stride that overflows", 0, tuple(3, 4), tuple(math.MaxInt/2, 1), "reaches past storage", ""},
		{"a huge view of one element through stride 0", 0, tuple(1<<40, 1<<20), tuple(0, 0), "", "not contiguous"},
		{"a transposed view", 0, tuple(4, 3), tuple(1, 4), "", "not contiguous"},
		{"a stride per dimension", 0, tuple(3, 4), tuple(4), "has size [3 4] but stride [4]", ""},
		{"a negative size", 0, tuple(-3, 4), tuple(4, 1), "a tensor's size[0] = -3 is negative", ""},
	}
	for _, c := range cases {
		v, err := rebuildTensor(s, c.offset, c.size, c.stride, false, nil)
		if !matches(err, c.wantErr) {
			t.Errorf("%s: rebuildTensor: %v, want an error with %q", c.name, err, c.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if err := v.(*tensorRef).readable(); !matches(err, c.wantRefusal) {
			t.Errorf("%s: readable: %v, want an error with %q", c.name, err, c.wantRefusal)
		}
	}
}

// matches says whether err is nil when want is "", or holds want.
func matches(err error, want string) bool {
	if want == "" {
		return err == nil
	}
	return err != nil && strings.Contains(err.Error(), want)
}

// TestTiedHead: lm_head.weight that is transformer.wte.weight's view (as
// nanoGPT's model.py ties them), or absent, is the tied head; another
// tensor becomes an LM head of its own.
func TestTiedHead(t *testing.T) {
	base, err := configOf([]entry{{"n_layer", 1}, {"n_head", 1}, {"n_embd", 2}, {"block_size", 3}, {"vocab_size", 4}, {"bias", false}})
	if err != nil {
		t.Fatal(err)
	}
	view := func(numel int, shape ...int) *tensorRef {
		stride := make([]int, len(shape))
		for i, n := len(shape)-1, 1; i >= 0; i-- {
			stride[i], n = n, n*shape[i]
		}
		return &tensorRef{storage: &storage{numel: numel, typ: floatStorage}, shape: shape, stride: stride}
	}
	state := func() map[string]*tensorRef {
		d, f := base.DModel, base.DFF
		st := map[string]*tensorRef{
			"transformer.wte.weight": view(8, 4, d), "transformer.wpe.weight": view(6, 3, d), "transformer.ln_f.weight": view(d, d),
		}
		for name, shape := range map[string][]int{"ln_1.weight": {d}, "attn.c_attn.weight": {3 * d, d}, "attn.c_proj.weight": {d, d},
			"ln_2.weight": {d}, "mlp.c_fc.weight": {f, d}, "mlp.c_proj.weight": {d, f}, "attn.bias": {1, 1, 3, 3}} {
			st["transformer.h.0."+name] = view(shape[0]*shape[len(shape)-1], shape...)
		}
		return st
	}
	for _, c := range []struct {
		name string
		head func(st map[string]*tensorRef) *tensorRef
		tied bool
	}{
		{"the embedding's view", func(st map[string]*tensorRef) *tensorRef {
			w := *st["transformer.wte.weight"]
			return &w
		}, true},
		{"absent", func(map[string]*tensorRef) *tensorRef { return nil }, true},
		{"a tensor of its own", func(map[string]*tensorRef) *tensorRef { return view(8, 4, 2) }, false},
	} {
		cfg, st := base, state()
		if head := c.head(st); head != nil {
			st["lm_head.weight"] = head
		}
		got, err := modelTensors(&cfg, st)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, hasHead := got["lm_head.weight"]
		if cfg.TieEmbeddings != c.tied || hasHead == c.tied || len(got) != len(cfg.ParamSpecs()) {
			t.Errorf("%s: tie_embeddings %v, lm_head.weight given %v, %d tensors for %d parameters; want tied %v",
				c.name, cfg.TieEmbeddings, hasHead, len(got), len(cfg.ParamSpecs()), c.tied)
		}
	}
}
