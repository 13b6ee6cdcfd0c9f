package train

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/generate"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/runlog"
)

// evaluator scores the model on a fixed held-out set with its own
// forward-only graph, which shares the model's weight tensors with the
// training graph. The graph, its machine and the batch buffers are made once;
// a call only copies rows in and reads the logits.
type evaluator struct {
	graph  *model.Graph
	vm     gorgonia.VM
	set    *data.Batch // the whole held-out set
	chunk  *data.Batch // one graph batch
	length int         // the task length of a train.eval_lengths evaluator, else 0
	write  bool        // also write every answer greedily (train.eval_generate)
	task   data.Task
}

// newEvaluator builds the graph for chunks of batch rows of the held-out set
// of size rows drawn from seed. Drawing a large set takes a while; a
// cancelled ctx stops it (evalSet).
func newEvaluator(ctx context.Context, m *model.Model, task data.Task, size, batch int, seed uint64) (*evaluator, error) {
	set, err := evalSet(ctx, task, size, seed)
	if err != nil {
		return nil, err
	}
	g, err := model.Build(m, model.BuildOptions{Batch: batch, SeqLen: task.SeqLen()})
	if err != nil {
		return nil, errors.Wrap(err, "evaluation graph")
	}
	// A one-shot machine: the evaluation reads the logits and the loss
	// alone, and a pretrained model's evaluation graph would otherwise hold
	// every activation of every chunk between evaluations (1.5 GB for 8
	// windows of 64 tokens at GPT-2 small's size).
	return &evaluator{graph: g, vm: g.NewOneShotMachine(), set: set, chunk: data.NewBatch(batch, task.SeqLen()), task: task}, nil
}

// evalSetChunk is how many rows evalSet draws between looks at its context.
const evalSetChunk = 4096

// evalSet is data.EvalSet drawn evalSetChunk rows at a time, returning
// ctx's error as soon as it is cancelled: the rows come from one generator in
// order, so the set is the same. The largest set the memory limit allows
// takes tens of seconds to draw, which a signal must be able to cut short.
func evalSet(ctx context.Context, task data.Task, size int, seed uint64) (*data.Batch, error) {
	set := data.NewBatch(size, task.SeqLen())
	rng := rand.New(rand.NewPCG(seed, data.EvalStream))
	t := set.SeqLen
	for lo := 0; lo < set.Size; lo += evalSetChunk {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(lo+evalSetChunk, set.Size)
		rows := &data.Batch{Size: hi - lo, SeqLen: t, Tokens: set.Tokens[lo*t : hi*t], Targets: set.Targets[lo*t : hi*t], Mask: set.Mask[lo*t : hi*t]}
		if err := data.Fill(data.HeldOut(task), rows, rng); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// run evaluates the whole set in chunks of the graph's batch. The last chunk
// is padded with copies of the set's first row whose loss mask is 0, so they
// add nothing to the loss and are not counted.
func (e *evaluator) run(step int) (runlog.EvalRecord, error) {
	set, chunk, t := e.set, e.chunk, e.set.SeqLen
	var lossSum, scored, correct float64
	var seqs, seqsRight int
	for lo := 0; lo < set.Size; lo += chunk.Size {
		rows := chunk.LoadChunk(set, lo)
		n := 0.0
		for _, m := range chunk.Mask {
			n += m
		}
		if err := e.graph.Feed(chunk.Tokens, chunk.Targets, chunk.Mask); err != nil {
			return runlog.EvalRecord{}, err
		}
		if err := e.vm.RunAll(); err != nil {
			e.vm.Reset()
			return runlog.EvalRecord{}, errors.Wrap(err, "running the evaluation graph")
		}
		if n > 0 {
			loss, err := e.graph.LossValue()
			if err != nil {
				e.vm.Reset()
				return runlog.EvalRecord{}, errors.Wrap(err, "the evaluation graph")
			}
			lossSum += loss * n
		}
		out, err := e.graph.LogitsValue()
		if err != nil {
			e.vm.Reset()
			return runlog.EvalRecord{}, errors.Wrap(err, "the evaluation graph")
		}
		var predict func(p int) int // argmax of position p's logits
		switch logits := out.Data().(type) {
		case []float32:
			v := len(logits) / (chunk.Size * t)
			predict = func(p int) int { return model.Argmax(logits[p*v : (p+1)*v]) }
		case []float64:
			v := len(logits) / (chunk.Size * t)
			predict = func(p int) int { return model.Argmax(logits[p*v : (p+1)*v]) }
		default:
			e.vm.Reset()
			return runlog.EvalRecord{}, errors.Errorf("the evaluation graph produced %v logits", out.Dtype())
		}
		for r := 0; r < rows; r++ {
			right, scoredRow := true, false
			for p := r * t; p < (r+1)*t; p++ {
				if chunk.Mask[p] == 0 {
					continue
				}
				scoredRow = true
				if predict(p) == chunk.Targets[p] {
					correct++
				} else {
					right = false
				}
			}
			if scoredRow {
				seqs++
				if right {
					seqsRight++
				}
			}
		}
		e.vm.Reset()
		scored += n
	}
	if scored == 0 || seqs == 0 {
		return runlog.EvalRecord{}, errors.New("the evaluation set scores no position")
	}
	rec := runlog.EvalRecord{Step: step, EvalLength: e.length, EvalLoss: lossSum / scored, TokenAcc: correct / scored, SeqAcc: float64(seqsRight) / float64(seqs)}
	addLanguageFigure(&rec, e.task)
	if e.write {
		res, err := generate.Evaluate(e.graph.Model, set, chunk.Size, true)
		if err != nil {
			return runlog.EvalRecord{}, err
		}
		seqAcc, tokAcc := res.ExactMatch(), float64(res.TokensRight)/float64(max(res.Tokens, 1))
		rec.GenSeqAcc, rec.GenTokenAcc = &seqAcc, &tokAcc
	}
	return rec, nil
}

// addLanguageFigure reads a text task's evaluation loss (the mean
// cross-entropy in nats) the way a language model is read: in bits per
// character on the character-level task, as perplexity per token through a
// tokenizer (whose tokens span varying numbers of characters).
func addLanguageFigure(rec *runlog.EvalRecord, task data.Task) {
	switch {
	case data.IsCharText(task):
		bits := rec.EvalLoss / math.Ln2
		rec.BitsPerChar = &bits
	case data.IsText(task):
		perplexity := math.Exp(rec.EvalLoss)
		rec.Perplexity = &perplexity
	}
}
