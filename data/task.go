package data

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/pkg/errors"
)

// Limits on TaskConfig. They keep sequences and vocabularies in the range a
// toy model on a CPU can handle; the run config also estimates memory.
const (
	MaxLength  = 512
	MaxSymbols = 65536
)

// TaskConfig selects a task and its size.
type TaskConfig struct {
	Name    string `yaml:"name" json:"name"`       // one of Names()
	Length  int    `yaml:"length" json:"length"`   // L: repeated length (repeat) or half length (copy, reverse, sort)
	Symbols int    `yaml:"symbols" json:"symbols"` // number of distinct symbols, excluding the separator
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
	"repeat":  func(c TaskConfig) Task { return repeatTask{c.Length, c.Symbols} },
	"copy":    func(c TaskConfig) Task { return halvesTask{"copy", c.Length, c.Symbols, copyHalf} },
	"reverse": func(c TaskConfig) Task { return halvesTask{"reverse", c.Length, c.Symbols, reverseHalf} },
	"sort":    func(c TaskConfig) Task { return halvesTask{"sort", c.Length, c.Symbols, sortHalf} },
}

// Names lists the known task names in alphabetical order.
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
	if _, ok := makers[c.Name]; !ok {
		return errors.Errorf("task.name = %q: unknown task (want one of: %s)", c.Name, strings.Join(Names(), ", "))
	}
	if c.Length < 1 || c.Length > MaxLength {
		return errors.Errorf("task.length = %d: must be in [1, %d]", c.Length, MaxLength)
	}
	if c.Symbols < 2 || c.Symbols > MaxSymbols {
		return errors.Errorf("task.symbols = %d: must be in [2, %d]", c.Symbols, MaxSymbols)
	}
	return nil
}

// New returns the task cfg describes.
func New(cfg TaskConfig) (Task, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return makers[cfg.Name](cfg), nil
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
