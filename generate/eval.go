package generate

import (
	"github.com/pkg/errors"

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

// Result is an autoregressive evaluation: how many rows the model wrote
// exactly, and each row's tokens.
type Result struct {
	Exact, Rows int
	Written     [][]int // row i: the tokens written over its span
	Spans       []Span
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
		for r := range rows {
			i := lo + r
			_, targets, mask := set.Row(i)
			span := res.Spans[i]
			res.Written[i] = written[r][:span.Last-span.First+1]
			if _, ok := AnswerSpan(mask); !ok {
				continue
			}
			res.Rows++
			right := true
			for k, id := range res.Written[i] {
				p := span.First + k
				right = right && (mask[p] == 0 || id == targets[p])
			}
			if right {
				res.Exact++
			}
		}
	}
	return res, nil
}
