package generate

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
)

// Span is the answer of one task example: positions First..Last are
// scored, so the prompt is tokens[:First+1] and the answer targets[First:Last+1].
type Span struct{ First, Last int }

// AnswerSpan finds the scored span of one row's mask; ok is false when no
// position is scored.
func AnswerSpan(mask []float64) (s Span, ok bool) {
	s.First = -1
	for i, m := range mask {
		if m != 0 {
			if s.First < 0 {
				s.First = i
			}
			s.Last = i
		}
	}
	return s, s.First >= 0
}

// Result is an autoregressive evaluation beside the teacher-forced one of
// the same rows: how many rows and scored tokens the model wrote right on
// its own, and how many it predicts right when fed the true tokens.
type Result struct {
	Rows, Tokens       int     // rows with a scored position, scored positions
	Exact, TokensRight int     // written on its own: rows right at every scored position, scored positions right
	TeacherExact       int     // teacher-forced: rows whose every scored prediction is right
	TeacherTokensRight int     // teacher-forced: scored predictions right
	Written            [][]int // row i: the tokens written over its span
	Spans              []Span
}

// ExactMatch is Exact/Rows.
func (r Result) ExactMatch() float64 {
	if r.Rows == 0 {
		return 0
	}
	return float64(r.Exact) / float64(r.Rows)
}

// Evaluate writes the answer of every row of set greedily, batch rows at a
// time, and counts the rows whose every scored position equals its target.
// A row with no scored position is skipped.
func Evaluate(m *model.Model, set *data.Batch, batch int, cached bool) (Result, error) {
	batch = max(1, min(batch, set.Size))
	st, err := New(m, batch, set.SeqLen, cached)
	if err != nil {
		return Result{}, err
	}
	defer st.Close()
	forward, err := model.Build(m, model.BuildOptions{Batch: batch, SeqLen: set.SeqLen})
	if err != nil {
		return Result{}, errors.Wrap(err, "teacher-forced evaluation")
	}
	vm := forward.NewLeanMachine()
	defer vm.Close()
	chunk := data.NewBatch(batch, set.SeqLen)
	s, _ := NewSampler(Greedy)
	res := Result{Written: make([][]int, set.Size), Spans: make([]Span, set.Size)}
	for lo := 0; lo < set.Size; lo += batch {
		rows := min(batch, set.Size-lo)
		prompts, n := make([][]int, batch), make([]int, batch)
		for r := range batch {
			i := lo + min(r, rows-1) // padding rows repeat the chunk's last
			tokens, _, mask := set.Row(i)
			span, ok := AnswerSpan(mask)
			if !ok {
				span = Span{0, 0}
			}
			res.Spans[i] = span
			prompts[r] = tokens[:span.First+1]
			n[r] = span.Last - span.First + 1
		}
		written, err := Generate(st, prompts, n, s, m.Config.Vocab)
		if err != nil {
			return Result{}, errors.Wrap(err, "autoregressive evaluation")
		}
		chunk.LoadChunk(set, lo)
		predicted, err := teacherForced(forward, vm, chunk)
		if err != nil {
			return Result{}, err
		}
		for r := range rows {
			i := lo + r
			_, targets, mask := set.Row(i)
			span := res.Spans[i]
			res.Written[i] = written[r][:span.Last-span.First+1]
			if _, ok := AnswerSpan(mask); !ok {
				continue
			}
			res.Rows++
			right, teacherRight := true, true
			for p := span.First; p <= span.Last; p++ {
				if mask[p] == 0 {
					continue
				}
				res.Tokens++
				ok, teacherOK := res.Written[i][p-span.First] == targets[p], predicted[r*set.SeqLen+p] == targets[p]
				right, teacherRight = right && ok, teacherRight && teacherOK
				res.TokensRight += b2i(ok)
				res.TeacherTokensRight += b2i(teacherOK)
			}
			res.Exact += b2i(right)
			res.TeacherExact += b2i(teacherRight)
		}
	}
	return res, nil
}

// teacherForced runs the forward graph on chunk and returns the argmax
// prediction at every position, (B*T).
func teacherForced(g *model.Graph, vm gorgonia.VM, chunk *data.Batch) ([]int, error) {
	if err := g.Feed(chunk.Tokens, chunk.Targets, chunk.Mask); err != nil {
		return nil, errors.Wrap(err, "teacher-forced evaluation")
	}
	vm.Reset()
	if err := vm.RunAll(); err != nil {
		return nil, errors.Wrap(err, "teacher-forced evaluation")
	}
	logits, err := model.Float64s(g.Logits.Value())
	if err != nil {
		return nil, errors.Wrap(err, "teacher-forced evaluation: logits")
	}
	v := g.Model.Config.Vocab
	out := make([]int, len(logits)/v)
	for i := range out {
		out[i] = model.Argmax(logits[i*v : (i+1)*v])
	}
	return out, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
