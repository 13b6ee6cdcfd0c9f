package analysis

import (
	"math"
	"reflect"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/open/opentest"
)

// mistralBF16 is the committed BF16 Mistral fixture (two layers of four
// query heads on one key-value head, vocabulary 96, untied) opened with
// its matrices mapped in place and opened widened to float32.
func mistralBF16(t *testing.T) (mapped, widened *model.Model) {
	t.Helper()
	const dir = "../open/hf/testdata/mistral"
	m, err := open.Open(dir, open.Options{Map: true})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Model.HasStored() {
		t.Fatal("the fixture opened with no weight mapped")
	}
	w, err := open.Open(dir, open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m.Model, w.Model
}

// TestHeadsOfAMappedModel: the factors HeadsOf widens from a mapped BF16
// model's rows, for a pick of heads, are the widened model's (Heads) for
// those heads, exactly; a layer or head the model has not is refused.
func TestHeadsOfAMappedModel(t *testing.T) {
	mapped, widened := mistralBF16(t)
	got, err := HeadsOf(mapped, []int{1}, []int{0, 3})
	if err != nil {
		t.Fatal(err)
	}
	all, err := Heads(widened)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range []int{0, 3} {
		g, w := got[0][i], all[1][h]
		if g.Layer != 1 || g.Index != h || !mat.Equal(g.Q, w.Q) || !mat.Equal(g.K, w.K) || !mat.Equal(g.V, w.V) || !mat.Equal(g.O, w.O) {
			t.Errorf("layer 1 head %d: the mapped model's factors differ from the widened model's", h)
		}
	}
	for _, pick := range [][2][]int{{{2}, {0}}, {{0}, {4}}} {
		if _, err := HeadsOf(mapped, pick[0], pick[1]); err == nil {
			t.Errorf("layers %v heads %v: no error", pick[0], pick[1])
		}
	}
}

// TestReadoutOfAMappedUnembedding: direct logit attribution and the logit
// lens, which read a mapped model's LM head in place, give the widened
// model's figures exactly (the 16-bit GEMM is bit-identical to the
// widened float32 one).
func TestReadoutOfAMappedUnembedding(t *testing.T) {
	mapped, widened := mistralBF16(t)
	b := &data.Batch{Size: 1, SeqLen: 6, Tokens: []int{5, 17, 3, 5, 17, 3}, Targets: []int{17, 3, 5, 17, 3, 40}, Mask: []float64{0, 1, 1, 1, 1, 1}}
	type figures struct {
		dla  *Attribution
		lens []Lens
	}
	var got [2]figures
	for i, m := range []*model.Model{mapped, widened} {
		c, err := RunWithCache(m, b, Circuit(m)...)
		if err != nil {
			t.Fatal(err)
		}
		if got[i].dla, err = DirectLogitAttribution(c); err != nil {
			t.Fatal(err)
		}
		if got[i].lens, err = LogitLens(c); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(got[0].dla, got[1].dla) {
		t.Errorf("direct logit attribution: mapped %+v, widened %+v", got[0].dla, got[1].dla)
	}
	if !reflect.DeepEqual(got[0].lens, got[1].lens) {
		t.Errorf("logit lens: mapped %+v, widened %+v", got[0].lens, got[1].lens)
	}
}

// TestCopyingByHeadMatchesFullCircuit: each head's d x d circuit, summed
// over vocabulary blocks in float32 GEMMs (copyingByHead), gives the V x V
// circuit's score within 1e-6 (float32 products against gonum's float64
// V x V; the worst seen is 6e-8), and its diagonal share, read on every
// token of these vocabularies (under MaxDiagonalSample), the V x V
// circuit's, on the committed run and on the Mistral fixture, mapped (read
// in place) and widened alike.
func TestCopyingByHeadMatchesFullCircuit(t *testing.T) {
	mapped, widened := mistralBF16(t)
	for name, m := range map[string]*model.Model{"induction": opentest.Induction(t).Model, "mistral mapped": mapped, "mistral widened": widened} {
		hs, err := Heads(m)
		if err != nil {
			t.Fatal(err)
		}
		var full []Copying
		if full, err = CopyingScores(widenedOr(m, widened), hs); err != nil {
			t.Fatal(err)
		}
		got, err := copyingByHead(m, hs)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(full) {
			t.Fatalf("%s: %d heads scored, want %d", name, len(got), len(full))
		}
		for i, c := range full {
			if g := got[i]; g.Layer != c.Layer || g.Head != c.Head || math.Abs(g.Score-c.Score) > 1e-6 || g.Diagonal == nil || *g.Diagonal != *c.Diagonal || g.DiagonalSample != 0 {
				t.Errorf("%s: L%d H%d: by head %+v, V x V score %v", name, c.Layer, c.Head, g, c.Score)
			}
		}
	}
}

// widenedOr is widened for the mapped model m (CopyingScores' V x V
// circuit reads the embeddings whole), else m.
func widenedOr(m, widened *model.Model) *model.Model {
	if m.HasStored() {
		return widened
	}
	return m
}

// TestCopyingByHeadSamplesTheDiagonal: past MaxDiagonalSample tokens the
// diagonal share is read on that many tokens evenly spaced, each column's
// largest entry the one the V x V circuit (gonum, float64) has there, and
// the record says how many.
func TestCopyingByHeadSamplesTheDiagonal(t *testing.T) {
	cfg := model.Config{Vocab: 1500, Context: 8, DModel: 16, Heads: 2, Layers: 1, TieEmbeddings: true}
	m, err := model.New(cfg, tensor.Float32, 7)
	if err != nil {
		t.Fatal(err)
	}
	// Each head's W_O is its W_V^T, so that its circuit W_E W_V^T W_V W_E^T
	// is a Gram matrix, whose diagonal often holds its column's largest
	// entry: a share neither 0 nor 1 to match.
	d, dm := cfg.DHead(), cfg.DModel
	qkv, wo := m.Param("blocks.0.attn.qkv.weight").Float32s(), m.Param("blocks.0.attn.out.weight").Float32s()
	for h := range cfg.Heads {
		for i := range d {
			for r := range dm {
				wo[r*cfg.Heads*d+h*d+i] = qkv[(2*cfg.Heads*d+h*d+i)*dm+r]
			}
		}
	}
	hs, err := Heads(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := copyingByHead(m, hs)
	if err != nil {
		t.Fatal(err)
	}
	we, wu, err := embeddings(m)
	if err != nil {
		t.Fatal(err)
	}
	v := m.Config.Vocab
	for i, h := range hs[0] {
		var uo, ov, c mat.Dense
		uo.Mul(wu, h.O)
		ov.Mul(&uo, h.V)
		c.Mul(&ov, we.T()) // (V, V)
		hits := 0
		for j := range MaxDiagonalSample {
			col := j * v / MaxDiagonalSample
			if mat.Col(nil, col, &c)[col] == mat.Max(c.ColView(col)) {
				hits++
			}
		}
		want := float64(hits) / MaxDiagonalSample
		if hits == 0 || hits == MaxDiagonalSample {
			t.Fatalf("head %d: the V x V circuit has %d of %d sampled columns largest on the diagonal; the test wants a share between", h.Index, hits, MaxDiagonalSample)
		}
		if g := got[i]; g.Diagonal == nil || *g.Diagonal != want || g.DiagonalSample != MaxDiagonalSample {
			t.Errorf("head %d: diagonal %v on %d tokens, want %v on %d", h.Index, g.Diagonal, g.DiagonalSample, want, MaxDiagonalSample)
		}
	}
}
