package data

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
)

// Limits on TaskConfig. They keep sequences and vocabularies in the range a
// toy model on a CPU can handle; the run config also estimates memory.
const (
	MaxLength  = 512
	MaxSymbols = 65536
)

// TaskConfig selects a task and its size.
type TaskConfig struct {
	Name    string `yaml:"name" json:"name"`       // one of Names(), or Text
	Length  int    `yaml:"length" json:"length"`   // L: repeated length (repeat) or half length (copy, reverse, sort)
	Symbols int    `yaml:"symbols" json:"symbols"` // number of distinct symbols, excluding the separator
	// MinLength, when set below Length, mixes lengths: each training and
	// held-out example has a length drawn uniformly from MinLength..Length,
	// padded at the end to the longest (padding is never scored, and a causal
	// query never sees it). 0 means Length.
	MinLength int `yaml:"min_length,omitempty" json:"min_length,omitempty"`
	// Path is the text task's UTF-8 file as the config names it, relative to
	// the directory train ran in; File records where that was and what it held.
	Path string `yaml:"path,omitempty" json:"path,omitempty"`
	// File records the text file as training read it: its absolute path, size
	// and SHA-256. The run config fills it (rundir.Config.Resolve), so a run
	// finds its file again from any directory and refuses one whose content
	// changed. Runs written before it was recorded have none.
	File TextFile `yaml:"file,omitempty" json:"file,omitzero"`
	// Chars is the text task's vocabulary, the file's distinct characters in
	// code point order. The run config fills it, so a checkpoint carries its
	// characters: a text model prints and reads characters without its file.
	Chars string `yaml:"chars,omitempty" json:"chars,omitempty"`
}

// Task generates examples of one sequence task.
type Task interface {
	Name() string
	Vocab() int  // symbols, plus the separator where the task uses one
	SeqLen() int // T fed to the model; the model's Context is SeqLen()
	// Sample fills one example: tokens and targets with ids, mask with 1 where
	// the position is scored and 0 elsewhere. Each slice has length SeqLen().
	Sample(rng *rand.Rand, tokens, targets []int, mask []float64)
	Label(id int) string // how to print a token: "7", "SEP"
}

// makers maps task names to constructors of valid configs.
var makers = map[string]func(TaskConfig) Task{
	"repeat":    func(c TaskConfig) Task { return repeatTask{c.Length, c.Symbols} },
	"copy":      func(c TaskConfig) Task { return halvesTask{"copy", c.Length, c.Symbols, copyHalf} },
	"reverse":   func(c TaskConfig) Task { return halvesTask{"reverse", c.Length, c.Symbols, reverseHalf} },
	"sort":      func(c TaskConfig) Task { return halvesTask{"sort", c.Length, c.Symbols, sortHalf} },
	"induction": func(c TaskConfig) Task { return inductionTask{c.Length, c.Symbols} },
}

// Text is the name of the task read from a file (data/text.go), which
// makers does not hold: making it can fail.
const Text = "text"

// Names lists the generated tasks' names in alphabetical order (all but
// text, which reads a file).
func Names() []string {
	names := make([]string, 0, len(makers))
	for name := range makers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Validate reports the first setting outside what the tasks allow, naming the
// key, the value and the allowed range.
func (c TaskConfig) Validate() error {
	if c.Name == Text {
		return c.validateText()
	}
	if c.Path != "" {
		return errors.Errorf("task.path = %s is only read by task.name = text, not %s", msg.Quote(c.Path), msg.Quote(c.Name))
	}
	if _, ok := makers[c.Name]; !ok {
		names := append(Names(), Text)
		return errors.Errorf("task.name = %s: unknown task (want one of: %s)%s", msg.Quote(c.Name), strings.Join(names, ", "), msg.DidYouMean(c.Name, names, nil))
	}
	if c.Length < 1 || c.Length > MaxLength {
		return errors.Errorf("task.length = %d: must be in [1, %d]", c.Length, MaxLength)
	}
	if c.Symbols < 2 || c.Symbols > MaxSymbols {
		return errors.Errorf("task.symbols = %d: must be in [2, %d]", c.Symbols, MaxSymbols)
	}
	if c.MinLength != 0 {
		if c.MinLength < 1 || c.MinLength > c.Length {
			return errors.Errorf("task.min_length = %d: must be in [1, task.length = %d]", c.MinLength, c.Length)
		}
		shortest := c
		shortest.Length, shortest.MinLength = c.MinLength, 0
		if err := shortest.Validate(); err != nil {
			return errors.Wrapf(err, "task.min_length = %d", c.MinLength)
		}
	}
	if c.Name == "induction" {
		if c.Length < minInductionLength {
			return errors.Errorf("task.length = %d: induction needs at least %d positions (two blocks of 2)", c.Length, minInductionLength)
		}
		if lo, _ := InductionBlockRange(c.Length); c.Symbols < c.Length+1-lo {
			return errors.Errorf("task.symbols = %d: induction of length %d draws %d distinct symbols (all but the second copy of a block of %d); use at least that many",
				c.Symbols, c.Length, c.Length+1-lo, lo)
		}
	}
	return nil
}

// New returns the task cfg describes.
func New(cfg TaskConfig) (Task, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Name == Text {
		return newTextTask(cfg)
	}
	if cfg.MinLength == 0 || cfg.MinLength == cfg.Length {
		return makers[cfg.Name](cfg), nil
	}
	mixed := mixedTask{}
	for l := cfg.MinLength; l <= cfg.Length; l++ {
		one := cfg
		one.Length, one.MinLength = l, 0
		mixed.byLength = append(mixed.byLength, makers[cfg.Name](one))
	}
	return mixed, nil
}

// AtLength is the task of cfg with every example of length l (task.length
// = l, no mixing): what a model trained on cfg is evaluated on at another
// length.
func AtLength(cfg TaskConfig, l int) (Task, error) {
	cfg.Length, cfg.MinLength = l, 0
	return New(cfg)
}

// mixedTask draws each example from one of byLength (lengths MinLength ..
// Length, in order) with equal chance, and pads it at the end to the
// longest's sequence length.
type mixedTask struct{ byLength []Task }

func (t mixedTask) longest() Task       { return t.byLength[len(t.byLength)-1] }
func (t mixedTask) Name() string        { return t.longest().Name() }
func (t mixedTask) Vocab() int          { return t.longest().Vocab() }
func (t mixedTask) SeqLen() int         { return t.longest().SeqLen() }
func (t mixedTask) Label(id int) string { return t.longest().Label(id) }

func (t mixedTask) Sample(rng *rand.Rand, tokens, targets []int, mask []float64) {
	one := t.byLength[rng.IntN(len(t.byLength))]
	n := one.SeqLen()
	one.Sample(rng, tokens[:n], targets[:n], mask[:n])
	clear(tokens[n:])
	clear(targets[n:])
	clear(mask[n:])
}

// base is the task itself, or the longest of a mixed task: what decides
// roles and separators.
func base(task Task) Task {
	if m, ok := task.(mixedTask); ok {
		return m.longest()
	}
	return task
}

// symbolLabel prints a symbol id, or the id in angle brackets when it is not
// one of the task's tokens (a model can still emit it only if misconfigured).
func symbolLabel(id, symbols int) string {
	if id < 0 || id >= symbols {
		return "<" + strconv.Itoa(id) + ">"
	}
	return strconv.Itoa(id)
}

// repeatTask: one random symbol repeated over the whole context.
type repeatTask struct{ length, symbols int }

func (t repeatTask) Name() string        { return "repeat" }
func (t repeatTask) Vocab() int          { return t.symbols }
func (t repeatTask) SeqLen() int         { return t.length }
func (t repeatTask) Label(id int) string { return symbolLabel(id, t.symbols) }

func (t repeatTask) Sample(rng *rand.Rand, tokens, targets []int, mask []float64) {
	s := rng.IntN(t.symbols)
	for i := range t.length {
		tokens[i], targets[i], mask[i] = s, s, 1
	}
}

// halvesTask: L random symbols, SEP, then a function of those symbols.
type halvesTask struct {
	name            string
	length, symbols int
	// second writes the second half for first into dst (both of length L).
	second func(dst, first []int)
}

func copyHalf(dst, first []int) { copy(dst, first) }

func reverseHalf(dst, first []int) {
	for i, s := range first {
		dst[len(first)-1-i] = s
	}
}

func sortHalf(dst, first []int) {
	copy(dst, first)
	slices.Sort(dst)
}

func (t halvesTask) Name() string { return t.name }
func (t halvesTask) Vocab() int   { return t.symbols + 1 }
func (t halvesTask) SeqLen() int  { return 2 * t.length }

func (t halvesTask) Label(id int) string {
	if id == t.symbols {
		return "SEP"
	}
	return symbolLabel(id, t.symbols)
}

func (t halvesTask) Sample(rng *rand.Rand, tokens, targets []int, mask []float64) {
	l := t.length
	seq := make([]int, 2*l+1) // (2L+1): first half, SEP, second half
	for i := range l {
		seq[i] = rng.IntN(t.symbols)
	}
	seq[l] = t.symbols
	t.second(seq[l+1:], seq[:l])
	copy(tokens, seq[:2*l])
	copy(targets, seq[1:])
	for i := range mask {
		mask[i] = 0
		if i >= l {
			mask[i] = 1
		}
	}
}

// inductionTask: distinct random symbols in which one block of random length
// appears twice, at random places; the second copy is scored from its second
// token on. See the package comment for the layout.
type inductionTask struct{ length, symbols int }

// minInductionLength is the shortest context that holds two blocks of
// minInductionBlock tokens (the sequence has length+1 tokens).
const (
	minInductionBlock  = 2
	minInductionLength = 2*minInductionBlock - 1
)

// InductionBlockRange is the range [lo, hi] the block length is drawn from
// for an induction task of context length: from a quarter to half of the
// length+1 symbols of the sequence (at least 2), so that every sequence has
// several scored positions and both copies fit.
func InductionBlockRange(length int) (lo, hi int) {
	return max(minInductionBlock, (length+1)/4), max(minInductionBlock, (length+1)/2)
}

func (t inductionTask) Name() string        { return "induction" }
func (t inductionTask) Vocab() int          { return t.symbols }
func (t inductionTask) SeqLen() int         { return t.length }
func (t inductionTask) Label(id int) string { return symbolLabel(id, t.symbols) }

func (t inductionTask) Sample(rng *rand.Rand, tokens, targets []int, mask []float64) {
	n := t.length + 1 // the full sequence seq
	lo, hi := InductionBlockRange(t.length)
	l := lo + rng.IntN(hi-lo+1)
	// Free positions outside the blocks: n-2l, split at random into the
	// stretch before the first copy, between the copies and after the second.
	free := n - 2*l
	first := rng.IntN(free + 1)
	gap := rng.IntN(free - first + 1)
	second := first + l + gap
	// n-l distinct symbols: the first n-l of a random permutation (a
	// partial Fisher-Yates shuffle), laid out skipping the second copy.
	perm := make([]int, t.symbols)
	for i := range perm {
		perm[i] = i
	}
	seq := make([]int, n)
	k := 0
	for i := range n {
		if i >= second && i < second+l {
			seq[i] = seq[first+i-second]
			continue
		}
		j := k + rng.IntN(t.symbols-k)
		perm[k], perm[j] = perm[j], perm[k]
		seq[i] = perm[k]
		k++
	}
	copy(tokens, seq[:n-1])
	copy(targets, seq[1:])
	for i := range mask {
		// Position i predicts seq[i+1]: scored for the second copy's
		// tokens 1..l-1, i.e. i in [second, second+l-2].
		mask[i] = 0
		if i >= second && i <= second+l-2 {
			mask[i] = 1
		}
	}
}

// RolesOnEveryRow reports whether the head roles of a model trained on task
// should be scored over every query position rather than only the scored
// ones. It is true for induction: its previous-token head does its work at
// the first copy (the keys the induction head matches), where nothing is
// scored, so scored rows alone would hide it.
func RolesOnEveryRow(task Task) bool {
	_, ok := base(task).(inductionTask)
	return ok
}

// Separator returns the task's separator id ("SEP") and true, or false for
// a task without one.
func Separator(task Task) (int, bool) {
	if t, ok := base(task).(halvesTask); ok {
		return t.symbols, true
	}
	return 0, false
}
