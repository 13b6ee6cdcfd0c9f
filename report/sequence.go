package report

import (
	"math/rand/v2"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/model"
)

// ExampleStream is the PCG stream of the sequence shown under a seed
// (analysis.ShownStream, in inspect's own range, never a training
// batch's); the scoring examples come from analysis.SamplesStream, so
// changing the number of samples never changes the sequence shown.
const ExampleStream = analysis.ShownStream

// Sequence is the one sequence whose heatmaps are shown.
type Sequence struct {
	Tokens  []int
	Targets []int     // next token; meaningless where Scored is 0
	Scored  []float64 // 1 where the prediction is scored (the task's mask), else 0
	Drawn   bool      // drawn from the task rather than given as Options.Tokens
	// TaskScored is the task's own mask (length SeqLen), for saying which
	// positions it scores when the tokens given are fewer; TaskSep the
	// positions where the task's example holds its separator.
	TaskScored []float64
	TaskSep    []int
	// MisplacedSep is the first position where the tokens given hold the
	// separator and the task's example does not, or the reverse; -1 when
	// the separators sit where the task's do (or the task has none).
	MisplacedSep int
}

// given is the sequence a user gave: its tokens (nil: none), the flag that
// gave them (-tokens or -text, for its errors), and whether every position
// is scored (what a user gives a model trained elsewhere, whose task has
// no mask of its own) or those the task scores.
type given struct {
	tokens        []int
	flag          string
	everyPosition bool
}

// example returns the user's tokens (validated against the model) or one
// example of the task drawn from seed. For user tokens the target of
// position t is token t+1, scored at every position or where the task's
// mask scores position t (given.everyPosition); the last position has no
// target.
func example(task data.Task, cfg model.Config, g given, seed uint64) (Sequence, error) {
	t := task.SeqLen()
	s := Sequence{Tokens: make([]int, t), Targets: make([]int, t), Scored: make([]float64, t)}
	if data.HasWindows(task) {
		task.Sample(rand.New(rand.NewPCG(seed, ExampleStream)), s.Tokens, s.Targets, s.Scored)
	} else {
		for i := range s.Scored {
			s.Scored[i] = 1 // the text task scores every position
		}
	}
	user, everyPosition := g.tokens, g.everyPosition
	if user == nil {
		s.Drawn, s.MisplacedSep = true, -1
		return s, nil
	}
	if err := checkTokens(cfg, user, g.flag); err != nil {
		return Sequence{}, err
	}
	drawn := s
	s = Sequence{Tokens: user, Targets: make([]int, len(user)), Scored: make([]float64, len(user)), TaskScored: drawn.Scored, MisplacedSep: -1}
	for i := 0; i+1 < len(user); i++ {
		s.Targets[i] = user[i+1]
		if i < len(drawn.Scored) || everyPosition {
			s.Scored[i] = 1
			if !everyPosition {
				s.Scored[i] = drawn.Scored[i]
			}
		}
	}
	sep := analysis.Separator(task)
	if sep == heads.NoSeparator {
		return s, nil
	}
	for i, id := range drawn.Tokens {
		if id == sep {
			s.TaskSep = append(s.TaskSep, i)
		}
	}
	for i, id := range user {
		// Past the task's length the task has no separator.
		if (id == sep) != (i < len(drawn.Tokens) && drawn.Tokens[i] == sep) {
			s.MisplacedSep = i
			break
		}
	}
	return s, nil
}

// checkTokens refuses tokens the model cannot run or that would not fit
// in memory, naming the flag that gave them (-tokens or -text).
func checkTokens(cfg model.Config, user []int, from string) error {
	if limit := cfg.MaxLength(); limit > 0 && len(user) > limit {
		return errors.Errorf("%s: %d tokens is longer than the model's context of %d", from, len(user), limit)
	}
	if err := checkSequenceMemory(cfg, len(user), from); err != nil {
		return err
	}
	for i, id := range user {
		if id < 0 || id >= cfg.Vocab {
			return errors.Errorf("%s: token %d at position %d is outside the vocabulary [0, %d)", from, id, i, cfg.Vocab)
		}
	}
	return nil
}

// scoredTargets is each position's target, nil where it is not scored.
func scoredTargets(tokens, targets []int, scored []float64) []*int {
	out := make([]*int, len(tokens))
	for i := range tokens {
		if scored[i] != 0 {
			out[i] = &targets[i]
		}
	}
	return out
}

// labels names each token of a sequence.
func labels(task data.Task, tokens []int) []string {
	out := make([]string, len(tokens))
	for i, id := range tokens {
		out[i] = task.Label(id)
	}
	return out
}
