package train

import (
	"context"
	"math"
	"testing"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/runlog"
)

// evaluate scores m at step on the held-out set of size rows drawn from
// seed, in chunks of batch rows.
func evaluate(t *testing.T, m *model.Model, task data.Task, size, batch int, seed uint64, step int) runlog.EvalRecord {
	t.Helper()
	ev, err := newEvaluator(context.Background(), m, task, size, batch, seed)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ev.run(step)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestEvalChunksAgree: evaluating 300 rows in chunks of 256 (the second one
// padded) equals evaluating them in one batch of 300 (loss within 1e-6,
// float32 sums in another order; accuracies exactly).
func TestEvalChunksAgree(t *testing.T) {
	cfg := parse(t, smallYAML)
	m, err := model.New(cfg.Model, modelDtype, 3)
	if err != nil {
		t.Fatal(err)
	}
	task, err := data.New(cfg.Task)
	if err != nil {
		t.Fatal(err)
	}
	a := evaluate(t, m, task, 300, 256, 9, 1)
	b := evaluate(t, m, task, 300, 300, 9, 1)
	if math.Abs(a.EvalLoss-b.EvalLoss) > 1e-6 || a.TokenAcc != b.TokenAcc || a.SeqAcc != b.SeqAcc {
		t.Fatalf("chunked %+v, whole %+v", a, b)
	}
	if a.EvalLoss < 1 || a.EvalLoss > 2.5 {
		t.Errorf("untrained eval loss %v, want near ln 6 = 1.79", a.EvalLoss)
	}
}

// TestEvalAgainstReference: with every weight 0 except the LM head bias b,
// the logits at every position are exactly b, so the evaluation figures
// follow from the held-out targets alone: loss = logsumexp(b) − b[target]
// averaged over scored positions (float64 here, float32 in the graph: 1e-5),
// a position is right iff its target is argmax b, a sequence iff all its
// scored targets are. 300 rows in chunks of 256 also exercise the padding.
func TestEvalAgainstReference(t *testing.T) {
	cfg := parse(t, `
task: {name: reverse, length: 2, symbols: 3}
model: {d_model: 8, heads: 2, layers: 1, lm_head_bias: true}
`)
	m, err := model.New(cfg.Model, modelDtype, 1)
	if err != nil {
		t.Fatal(err)
	}
	bias := []float64{0.3, -0.2, 1.1, 0.5} // argmax 2
	for _, p := range m.Params {
		data := p.Value.Data().([]float32)
		for i := range data {
			data[i] = 0
			if p.Name == "lm_head.bias" {
				data[i] = float32(bias[i])
			}
		}
	}
	task, err := data.New(cfg.Task)
	if err != nil {
		t.Fatal(err)
	}
	got := evaluate(t, m, task, 300, 256, 11, 7)

	lse := 0.0
	for _, b := range bias {
		lse += math.Exp(float64(float32(b)))
	}
	lse = math.Log(lse)
	set := data.EvalSet(task, 300, 11)
	var loss, scored, right, seqs, seqsRight float64
	for r := 0; r < set.Size; r++ {
		_, targets, mask := set.Row(r)
		all := true
		for i, target := range targets {
			if mask[i] == 0 {
				continue
			}
			scored++
			loss += lse - float64(float32(bias[target]))
			if target == 2 {
				right++
			} else {
				all = false
			}
		}
		seqs++
		if all {
			seqsRight++
		}
	}
	want := runlog.EvalRecord{Step: 7, EvalLoss: loss / scored, TokenAcc: right / scored, SeqAcc: seqsRight / seqs}
	if got.Step != 7 || math.Abs(got.EvalLoss-want.EvalLoss) > 1e-5 || got.TokenAcc != want.TokenAcc || got.SeqAcc != want.SeqAcc {
		t.Fatalf("evaluation %+v, reference %+v", got, want)
	}
	if want.TokenAcc == 0 || want.SeqAcc == 0 || want.SeqAcc == 1 {
		t.Fatalf("degenerate reference %+v", want)
	}
}
