package analysis

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
)

// TestEigenScoreMatchesNumpy: Σλ/Σ|λ| from gonum's eigenvalues equals
// numpy's (testdata/eigen_scores.json) within 1e-10.
func TestEigenScoreMatchesNumpy(t *testing.T) {
	raw, err := os.ReadFile("testdata/eigen_scores.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		N      int       `json:"n"`
		Matrix []float64 `json:"matrix"`
		Score  float64   `json:"score"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		got, err := eigenScore(mat.NewDense(c.N, c.N, c.Matrix))
		if err != nil || math.Abs(got-c.Score) > 1e-10 {
			t.Errorf("%dx%d: %v (%v), numpy %v", c.N, c.N, got, err, c.Score)
		}
	}
}

// TestCompositionKnownValues: with W_OV^A = I (D = 4) and W_QK^B = I, every
// composition is ||I||_F / ||I||_F^2 = 1/2; with A writing only directions
// B's keys, queries and values never read (W_OV^A = e1 e1^T, W_QK^B =
// W_OV^B = e2 e2^T) every one is 0; and K- but not Q-composition sees
// W_QK^B = e1 e2^T (queries read e1, keys e2) when A writes e2.
func TestCompositionKnownValues(t *testing.T) {
	eye := func() *mat.Dense {
		m := mat.NewDense(4, 4, nil)
		for i := 0; i < 4; i++ {
			m.Set(i, i, 1)
		}
		return m
	}
	outer := func(i, j int) *mat.Dense {
		m := mat.NewDense(4, 4, nil)
		m.Set(i, j, 1)
		return m
	}
	// head has W_QK = qk and W_OV = ov (W_Q = W_O = I, W_K = qk, W_V = ov).
	head := func(layer int, qk, ov *mat.Dense) Head {
		return Head{Layer: layer, Q: eye(), K: qk, V: ov, O: eye()}
	}
	check := func(name string, a, b Head, q, k, v float64) {
		t.Helper()
		c := Compositions([][]Head{{a}, {b}})[0]
		if math.Abs(c.Q-q) > 1e-12 || math.Abs(c.K-k) > 1e-12 || math.Abs(c.V-v) > 1e-12 {
			t.Errorf("%s: Q %v K %v V %v, want %v %v %v", name, c.Q, c.K, c.V, q, k, v)
		}
	}
	check("identities", head(0, eye(), eye()), head(1, eye(), eye()), 0.5, 0.5, 0.5)
	check("orthogonal", head(0, eye(), outer(0, 0)), head(1, outer(1, 1), outer(1, 1)), 0, 0, 0)
	check("keys only", head(0, eye(), outer(1, 1)), head(1, outer(0, 1), outer(0, 0)), 0, 1, 0)
}

// TestCompositionsMatchTheFullMaps: the scores from the factors equal
// ||W_A W_B||_F / (||W_A||_F ||W_B||_F) of the D x D maps multiplied out
// (gonum's Frobenius norm), within 1e-6 (the factors' d x d products are
// float32 GEMMs), on random models with grouped heads and with a latent.
func TestCompositionsMatchTheFullMaps(t *testing.T) {
	full := func(x, y *mat.Dense) float64 {
		var xy mat.Dense
		xy.Mul(x, y)
		return mat.Norm(&xy, 2) / (mat.Norm(x, 2) * mat.Norm(y, 2))
	}
	for _, cfg := range []model.Config{
		{Vocab: 11, Context: 8, DModel: 16, Heads: 4, KVHeads: 2, Layers: 3},
		{Vocab: 11, Context: 8, DModel: 16, Heads: 4, KVLatent: 6, Layers: 2},
	} {
		m, err := model.New(cfg, tensor.Float64, 9)
		if err != nil {
			t.Fatal(err)
		}
		hs, err := Heads(m)
		if err != nil {
			t.Fatal(err)
		}
		got := Compositions(hs)
		if want := (cfg.Layers - 1) * cfg.Heads * cfg.Heads; len(got) != want {
			t.Fatalf("%d pairs, want %d", len(got), want)
		}
		for _, c := range got {
			a, b := hs[c.From[0]][c.From[1]], hs[c.To[0]][c.To[1]]
			want := [3]float64{full(mat.DenseCopyOf(b.QK().T()), a.OV()), full(b.QK(), a.OV()), full(b.OV(), a.OV())}
			for i, g := range [3]float64{c.Q, c.K, c.V} {
				if math.Abs(g-want[i]) > 1e-6 {
					t.Errorf("kv_latent %d: %v -> %v: %c-composition %v, from the full maps %v", cfg.KVLatent, c.From, c.To, "QKV"[i], g, want[i])
				}
			}
		}
	}
}

// TestInductionCircuit: on the committed induction run the layer-1
// induction head (L1 H3) has the highest prefix-matching score and a
// positive copying score, and the K-composition of the layer-0
// previous-token head (L0 H1) into it is the largest of every layer-0 ->
// layer-1 pair.
func TestInductionCircuit(t *testing.T) {
	m := opentest.Induction(t).Model
	c, err := Measure(m, 64, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if best := topHead(c.PrefixMatching); best != [2]int{1, 3} {
		t.Errorf("highest prefix matching at L%d H%d (%v), want L1 H3", best[0], best[1], c.PrefixMatching)
	}
	for _, cp := range c.Copying {
		if cp.Layer == 1 && cp.Head == 3 && !(cp.Score > 0) {
			t.Errorf("L1 H3 copying score %v, want positive", cp.Score)
		}
	}
	top := c.Composition[0]
	for _, comp := range c.Composition {
		if comp.K > top.K {
			top = comp
		}
	}
	if top.From != [2]int{0, 1} || top.To != [2]int{1, 3} {
		t.Errorf("largest K-composition %v -> %v (%v), want L0 H1 -> L1 H3", top.From, top.To, top.K)
	}
	t.Logf("prefix matching %v; K-composition L0H1->L1H3 %.3f", c.PrefixMatching, top.K)
}

// TestDirectLogitAttribution: on the committed induction run the parts add
// up to the correct-token logit the graph computes (mean over the scored
// positions, within 1e-4 relative: the graph runs float32, the split
// float64), and the layer-1 induction head (L1 H3) adds the most of any
// head.
func TestDirectLogitAttribution(t *testing.T) {
	op := opentest.Induction(t)
	m, task := op.Model, op.Task
	a, err := DirectLogitAttribution(cached(t, m, task, 32, 1))
	if err != nil {
		t.Fatal(err)
	}
	if want, k := meanTargetLogit(t, m, task, 32, 1); k != a.Positions || math.Abs(a.Logit-want) > 1e-4*math.Abs(want) {
		t.Errorf("the parts add to %v over %d positions, the graph's logit is %v over %d", a.Logit, a.Positions, want, k)
	}
	if best := topHead(a.Heads); best != [2]int{1, 3} {
		t.Errorf("largest head attribution at L%d H%d: %v", best[0], best[1], a.Heads)
	}
	t.Logf("logit %.3f = embeddings %.3f + biases %.3f + heads %v", a.Logit, a.Embeddings, a.Biases, a.Heads)
}

// TestPatching: on the committed induction run, corrupting the first copy
// of the block costs the correct token's logit (more than a nat), and
// patching the layer-1 induction head (L1 H3) from the clean run restores
// the largest share of it.
func TestPatching(t *testing.T) {
	op := opentest.Induction(t)
	m, task := op.Model, op.Task
	clean := cached(t, m, task, 32, 1)
	p, err := Patch(clean, task, Corruption(clean.Batch, m.Config.Vocab, 1), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !(p.CleanLogit > p.CorruptedLogit+1) {
		t.Errorf("clean logit %v, corrupted %v: the corruption should cost more than a nat", p.CleanLogit, p.CorruptedLogit)
	}
	if best := topHead(p.Restored); best != [2]int{1, 3} {
		t.Errorf("largest share restored by L%d H%d: %v", best[0], best[1], p.Restored)
	}
	t.Logf("clean %.3f corrupted %.3f restored %v", p.CleanLogit, p.CorruptedLogit, p.Restored)
	if p.Examples != 32 {
		t.Errorf("patched %d of 32 examples, want all", p.Examples)
	}
	// Past MaxPerHeadTokens only the first examples are patched, and the
	// clean logit is theirs.
	cfg := m.Config
	many := cached(t, m, task, 2*MaxPerHeadTokens/(cfg.Layers*cfg.Heads*task.SeqLen()), 1)
	bounded, err := Patch(many, task, Corruption(many.Batch, cfg.Vocab, 1), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := MaxPerHeadTokens / (cfg.Layers * cfg.Heads * task.SeqLen())
	var sum, k float64
	for row, keep := range many.Batch.Mask[:want*task.SeqLen()] {
		if keep != 0 {
			sum += many.Logits.At(row*cfg.Vocab + many.Batch.Targets[row])
			k++
		}
	}
	if bounded.Examples != want || math.Abs(bounded.CleanLogit-sum/k) > 1e-9 {
		t.Errorf("%d examples: patched %d with clean logit %v; want the first %d, whose logit is %v", many.Batch.Size, bounded.Examples, bounded.CleanLogit, want, sum/k)
	}
}

// TestPatchingSomeHeads: patching the heads given patches those alone
// (progress counts them), each share equal to the run over every head's
// and the others left 0, and uses more examples than the whole model
// would (PerHeadExamples of 2 heads).
func TestPatchingSomeHeads(t *testing.T) {
	op := opentest.Induction(t)
	m, task := op.Model, op.Task
	cfg := m.Config
	some := ablation.Heads{{1, 3}, {0, 2}}
	clean := cached(t, m, task, 8, 1)
	corrupt := Corruption(clean.Batch, cfg.Vocab, 1)
	var total int
	p, err := Patch(clean, task, corrupt, some, func(_, t int) { total = t })
	if err != nil {
		t.Fatal(err)
	}
	all, err := Patch(clean, task, corrupt, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if total != len(some) || !slices.Equal(p.Heads, some) || all.Heads != nil {
		t.Fatalf("progress of %d heads, heads %v (every head's run: %v); want %d, %v (nil)", total, p.Heads, all.Heads, len(some), some)
	}
	for l := range cfg.Layers {
		for h := range cfg.Heads {
			want := 0.0
			if slices.Contains(some, [2]int{l, h}) {
				want = all.Restored[l][h]
			}
			if p.Restored[l][h] != want {
				t.Errorf("L%d H%d: restored %v, want %v", l, h, p.Restored[l][h], want)
			}
		}
	}
	n := 2 * MaxPerHeadTokens / (cfg.Layers * cfg.Heads * task.SeqLen())
	many := cached(t, m, task, n, 1)
	if p, err = Patch(many, task, Corruption(many.Batch, cfg.Vocab, 1), some, nil); err != nil {
		t.Fatal(err)
	}
	if p.Examples != n {
		t.Errorf("2 heads patched on %d of %d examples, want all (every head's run patches %d)", p.Examples, n, n/2)
	}
}

// TestPatchingRunsTheCorruptionGiven: a cache of examples drawn from
// another seed than the one patching is given (5, not 1) is corrupted from
// its own tokens: each row loses exactly the first copy of its block, to
// symbols the row does not hold, and the corrupted run Patch measures is
// that batch's. Patch once replayed the seed's draw to step past it, so
// its corruption depended on a batch it never ran.
func TestPatchingRunsTheCorruptionGiven(t *testing.T) {
	op := opentest.Induction(t)
	m, task := op.Model, op.Task
	clean := cached(t, m, task, 2, 5)
	corrupt := Corruption(clean.Batch, m.Config.Vocab, 1)
	for r := range clean.Batch.Size {
		tokens, _, _ := clean.Batch.Row(r)
		got, _, _ := corrupt.Row(r)
		for i, tok := range tokens {
			firstCopy := slices.Index(tokens, tok) == i && slices.Contains(tokens[i+1:], tok)
			switch {
			case firstCopy && slices.Contains(tokens, got[i]):
				t.Errorf("row %d position %d: the first copy of %d became %d, a symbol the row holds", r, i, tok, got[i])
			case !firstCopy && got[i] != tok:
				t.Errorf("row %d position %d: %d, not a first copy, became %d", r, i, tok, got[i])
			}
		}
	}
	p, err := Patch(clean, task, corrupt, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ran, err := RunWithCache(m, corrupt)
	if err != nil {
		t.Fatal(err)
	}
	var sum, k float64
	for row, keep := range corrupt.Mask {
		if keep != 0 {
			sum += ran.Logits.At(row*m.Config.Vocab + corrupt.Targets[row])
			k++
		}
	}
	if math.Abs(p.CorruptedLogit-sum/k) > 1e-9 {
		t.Errorf("corrupted logit %v; the corrupted batch given runs to %v", p.CorruptedLogit, sum/k)
	}
}

// TestPatchingNeedsAFall: an untrained model of the induction run's shape
// hardly reads the earlier copy, so corrupting it moves the correct
// token's logit by less than MinPatchingFall; Patch then defines no share
// (a share of such a fall is noise) and says by how much it moved.
func TestPatchingNeedsAFall(t *testing.T) {
	op := opentest.Induction(t)
	untrained, err := model.New(op.Model.Config, tensor.Float64, 7)
	if err != nil {
		t.Fatal(err)
	}
	clean := cached(t, untrained, op.Task, 8, 1)
	p, err := Patch(clean, op.Task, Corruption(clean.Batch, untrained.Config.Vocab, 1), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	gap := p.CleanLogit - p.CorruptedLogit
	if gap >= MinPatchingFall {
		t.Fatalf("the untrained model's fall is %v; the test needs one under %v", gap, MinPatchingFall)
	}
	if p.Restored != nil || p.ByPosition != nil || !strings.Contains(p.Undefined, fmt.Sprintf("%+.3g", -gap)) {
		t.Errorf("a fall of %v: restored %v, undefined %q; want no shares and the move named", gap, p.Restored, p.Undefined)
	}
}

// TestInContextLearning: on the committed induction run the copy's
// predictions lose far less than the same predictions at the block's first
// occurrence (score below -2.5 nats, the late loss below 0.3); a model
// whose logits are all zero
// loses ln V at both, a score of exactly 0; a task other than induction is
// refused.
func TestInContextLearning(t *testing.T) {
	op := opentest.Induction(t)
	m, task := op.Model, op.Task
	icl, err := ICL(cached(t, m, task, 64, 1), task)
	if err != nil {
		t.Fatal(err)
	}
	if icl.Score > -2.5 || icl.Late > 0.3 || icl.Early < 2 || icl.Pairs < 64*5 {
		t.Errorf("induction run: %+v", icl)
	}
	t.Logf("ICL %+v", icl)
	for _, p := range m.Params {
		clear(p.Value.Float32s())
	}
	flat, err := ICL(cached(t, m, task, 8, 1), task)
	if err != nil {
		t.Fatal(err)
	}
	lnV := math.Log(float64(m.Config.Vocab))
	if math.Abs(flat.Early-lnV) > 1e-6 || math.Abs(flat.Late-lnV) > 1e-6 || flat.Score != 0 {
		t.Errorf("zero logits: %+v, want early = late = ln %d = %.6f and score 0", flat, m.Config.Vocab, lnV)
	}
	copyTask, err := data.New(data.TaskConfig{Name: "copy", Length: 4, Symbols: 8})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ICL(cached(t, m, task, 4, 1), copyTask); err == nil {
		t.Error("ICL on a copy task succeeded")
	}
}

// TestLogitLens: the last depth's lens is the model's own prediction (its
// accuracy equals the argmax of the graph's logits, its mean target logit
// within 1e-4), on the attention-only induction run and on models with
// full blocks (each kind of final norm and head, and a final soft-cap); the
// embeddings alone predict nearly nothing on induction.
func TestLogitLens(t *testing.T) {
	op := opentest.Induction(t)
	m, task := op.Model, op.Task
	models := []*model.Model{m}
	configs := fullBlockConfigs(m.Config.Vocab, m.Config.Context)
	capped := configs["llama"] // a final soft-cap that bends these logits: the lens must apply it
	capped.FinalSoftcap = 0.05
	for _, cfg := range append(slices.Collect(maps.Values(configs)), capped) {
		full, err := model.New(cfg, m.Dtype, 3)
		if err != nil {
			t.Fatal(err)
		}
		models = append(models, full)
	}
	for _, mm := range models {
		lens, err := LogitLens(cached(t, mm, task, 16, 2))
		if err != nil {
			t.Fatal(err)
		}
		if len(lens) != mm.Config.Layers+1 {
			t.Fatalf("%d depths, want %d", len(lens), mm.Config.Layers+1)
		}
		b := examples(t, task, 16, 2)
		logits := opentest.Logits(t, mm, b)
		v := mm.Config.Vocab
		var right, correct, scored float64
		for p, s := range b.Mask {
			if s == 0 {
				continue
			}
			row := logits[p*v : (p+1)*v]
			best := 0
			for k := range row {
				if row[k] > row[best] {
					best = k
				}
			}
			if best == b.Targets[p] {
				right++
			}
			correct += row[b.Targets[p]]
			scored++
		}
		last := lens[len(lens)-1]
		if last.Accuracy != right/scored || math.Abs(last.Correct-correct/scored) > 1e-4*(1+math.Abs(correct/scored)) {
			t.Errorf("last depth %+v, the model: accuracy %v, target logit %v", last, right/scored, correct/scored)
		}
		if mm == m && (lens[0].Accuracy > 0.1 || last.Accuracy < 0.95) {
			t.Errorf("induction lens %+v: want the embeddings near 0 and the output near 1", lens)
		}
		t.Logf("lens %+v", lens)
	}
}

// checkTopTokens holds a's TopTokens to float64 loops over the cached
// run: for each head, Σ over the scored positions of W_U ln_f(W_O^h y) at
// the position's divisor (sqrt(var + eps), or RMS), the biases left out;
// the tokens named must carry the largest sums, in order, within 1e-4
// relative (the product runs in float32).
func checkTopTokens(t *testing.T, m *model.Model, a *Attribution, c *Cache) {
	t.Helper()
	cfg := m.Config
	d, dh, v := cfg.DModel, cfg.DHead(), cfg.Vocab
	param := func(name string) []float64 {
		x, err := model.Float64s(m.Param(name))
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	wu, lnW := param(cfg.UnembeddingName()), param("ln_f.weight")
	final, err := c.Get(model.ResidPost(cfg.Layers - 1))
	if err != nil {
		t.Fatal(err)
	}
	for l := range cfg.Layers {
		wo := param(fmt.Sprintf("blocks.%d.attn.out.weight", l))
		ys, err := c.Get(model.HeadOut(l))
		if err != nil {
			t.Fatal(err)
		}
		for h := range cfg.Heads {
			sums := make([]float64, v)
			for row, keep := range c.Batch.Mask {
				if keep == 0 {
					continue
				}
				x := final.Block(row)
				var mean, sq float64
				for _, xi := range x {
					mean += xi / float64(d)
				}
				w := make([]float64, d)
				bi, p := row/c.Batch.SeqLen, row%c.Batch.SeqLen
				y := ys.Block(bi, h, p)
				var wMean float64
				for i := range d {
					for j := range dh {
						w[i] += wo[i*cfg.Heads*dh+h*dh+j] * y[j]
					}
					wMean += w[i] / float64(d)
				}
				for _, xi := range x {
					if cfg.NormKind() == model.NormLayer {
						sq += (xi - mean) * (xi - mean)
					} else {
						sq += xi * xi
					}
				}
				div := math.Sqrt(sq/float64(d) + cfg.Eps())
				for i := range w {
					if cfg.NormKind() == model.NormLayer {
						w[i] -= wMean
					}
					w[i] *= lnW[i] / div
				}
				for k := range v {
					for i := range d {
						sums[k] += wu[k*d+i] * w[i]
					}
				}
			}
			want := slices.Clone(sums)
			slices.SortFunc(want, func(x, y float64) int { return cmp.Compare(y, x) })
			got := a.TopTokens[l][h]
			if len(got) != TopTokenCount {
				t.Fatalf("L%d H%d: %d top tokens, want %d", l, h, len(got), TopTokenCount)
			}
			for i, id := range got {
				if math.Abs(sums[id]-want[i]) > 1e-4*(1+math.Abs(want[i])) {
					t.Errorf("L%d H%d: top token %d is %d (sum %v), the %d-th largest sum is %v", l, h, i, id, sums[id], i, want[i])
				}
			}
		}
	}
}

// TestCopyingEigenMatchesFullCircuit: the D x D shortcut gives the V x V
// circuit's score (within 1e-9), on the committed run and on a model whose
// vocabulary (50) is wider than its residual stream (16), with grouped heads.
func TestCopyingEigenMatchesFullCircuit(t *testing.T) {
	m := opentest.Induction(t).Model
	wide, err := model.New(model.Config{Vocab: 50, Context: 8, DModel: 16, Heads: 4, Layers: 2, KVHeads: 2}, m.Dtype, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, mm := range []*model.Model{m, wide} {
		hs, err := Heads(mm)
		if err != nil {
			t.Fatal(err)
		}
		full, err := CopyingScores(mm, hs)
		if err != nil {
			t.Fatal(err)
		}
		short, err := CopyingEigen(mm, hs)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range full {
			if got := short[c.Layer][c.Head]; math.Abs(got-c.Score) > 1e-9 {
				t.Errorf("V %d: L%d H%d: D x D score %v, V x V %v", mm.Config.Vocab, c.Layer, c.Head, got, c.Score)
			}
		}
	}
}

// fullBlockConfigs are models with MLP blocks, one per kind of readout:
// GPT-2's (LayerNorm with a bias, an LM head of its own with a bias),
// nanoGPT's bias=False (LayerNorm without a bias, tied head) and Llama's
// (RMSNorm at eps 1e-6, SwiGLU, tied head, QK-norm, rope, MQA, no biases).
func fullBlockConfigs(vocab, context int) map[string]model.Config {
	base := model.Config{Vocab: vocab, Context: context, DModel: 16, Heads: 2, Layers: 2, MLP: true, DFF: 32}
	gpt2, nano, llama := base, base, base
	gpt2.OutBias, gpt2.LMBias = true, true
	nano.NormBias, nano.TieEmbeddings = model.FlagOff, true
	llama.Norm, llama.NormEps, llama.Activation, llama.TieEmbeddings, llama.QKNorm, llama.MLPBias = model.NormRMS, 1e-6, model.ActivationSwiGLU, true, true, model.FlagOff
	llama.Position, llama.KVHeads = model.PositionRope, 1
	return map[string]model.Config{"gpt2": gpt2, "nanogpt": nano, "llama": llama}
}

// TestDirectLogitAttributionFullBlocks: with MLP blocks and a final norm
// (its scale held fixed), the parts still add up to the graph's mean
// correct-token logit (1e-4, float32 graph), for each kind of readout; and
// with every MLP's output projection zeroed, the MLPs add nothing (1e-6)
// while the sum still holds.
func TestDirectLogitAttributionFullBlocks(t *testing.T) {
	task, err := data.New(data.TaskConfig{Name: "copy", Length: 5, Symbols: 7})
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range fullBlockConfigs(task.Vocab(), task.SeqLen()) {
		t.Run(name, func(t *testing.T) {
			m, err := model.New(cfg, tensor.Float32, 9)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range m.Params { // non-zero biases and norm shifts, so every term is exercised
				if len(p.Value.Shape()) == 1 {
					for i := range p.Value.Float32s() {
						p.Value.Float32s()[i] += 0.05 * float32(i%3-1)
					}
				}
			}
			check := func(what string) *Attribution {
				a, err := DirectLogitAttribution(cached(t, m, task, 16, 2))
				if err != nil {
					t.Fatal(err)
				}
				if want, k := meanTargetLogit(t, m, task, 16, 2); k != a.Positions || len(a.MLPs) != 2 || math.Abs(a.Logit-want) > 1e-4*(1+math.Abs(want)) {
					t.Errorf("%s: the parts add to %v over %d positions (MLPs %v), the graph's logit is %v over %d", what, a.Logit, a.Positions, a.MLPs, want, k)
				}
				return a
			}
			checkTopTokens(t, m, check("random weights"), cached(t, m, task, 16, 2))
			for l := range cfg.Layers {
				for _, p := range m.Params {
					if strings.HasPrefix(p.Name, fmt.Sprintf("blocks.%d.mlp.", l)) && (strings.Contains(p.Name, ".proj.") || strings.Contains(p.Name, ".down.")) {
						clear(p.Value.Float32s())
					}
				}
			}
			a := check("MLPs zeroed")
			for l, x := range a.MLPs {
				if math.Abs(x) > 1e-6 {
					t.Errorf("layer %d's zeroed MLP adds %v", l, x)
				}
			}
		})
	}
}

// meanTargetLogit is the graph's own mean correct-token logit over the
// scored positions of the n examples an analysis draws from seed, and how
// many positions that is, from a forward of its own.
func meanTargetLogit(t *testing.T, m *model.Model, task data.Task, n int, seed uint64) (float64, int) {
	t.Helper()
	b := examples(t, task, n, seed)
	logits := opentest.Logits(t, m, b)
	var sum float64
	var k int
	for row, keep := range b.Mask {
		if keep != 0 {
			sum += logits[row*m.Config.Vocab+b.Targets[row]]
			k++
		}
	}
	return sum / float64(k), k
}

// examples are the n examples of task the analyses draw from seed.
func examples(t *testing.T, task data.Task, n int, seed uint64) *data.Batch {
	t.Helper()
	b, err := Examples(task, n, seed)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// cached is a run of m over the examples of task drawn from seed, keeping
// what the circuit analyses read.
func cached(t *testing.T, m *model.Model, task data.Task, n int, seed uint64) *Cache {
	t.Helper()
	c, err := RunWithCache(m, examples(t, task, n, seed), Circuit(m)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// topHead is the layer and head of the largest of scores[layer][head] (the
// first of equals).
func topHead(scores [][]float64) [2]int {
	best := [2]int{}
	for l, layer := range scores {
		for h, s := range layer {
			if s > scores[best[0]][best[1]] {
				best = [2]int{l, h}
			}
		}
	}
	return best
}

// TestCopyingPastMaxVocab: past MaxCopyingVocab tokens CopyingScores gives
// every head the D x D shortcut's score and no diagonal share (the V x V
// circuit is not built).
func TestCopyingPastMaxVocab(t *testing.T) {
	m, err := model.New(model.Config{Vocab: MaxCopyingVocab + 1, Context: 8, DModel: 16, Heads: 2, Layers: 2}, tensor.Float64, 5)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := Heads(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := CopyingScores(m, hs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := CopyingEigen(m, hs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d heads scored, want 4", len(got))
	}
	for _, c := range got {
		if c.Score != want[c.Layer][c.Head] || c.Diagonal != nil {
			t.Errorf("L%d H%d: score %v (shortcut %v), diagonal %v; want the shortcut's and none", c.Layer, c.Head, c.Score, want[c.Layer][c.Head], c.Diagonal)
		}
	}
}
