package data

import (
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
)

// MaxTextBytes is the largest text file the text task reads: a
// character-level model on a CPU trains on a few megabytes at most.
const MaxTextBytes = 16 << 20

// HeldOutFraction is the share of a text file, at its end, that only the
// held-out set draws from.
const HeldOutFraction = 0.1

// textTask: windows of a UTF-8 file, one token per character (nanoGPT's
// shakespeare_char). Training windows start anywhere in the first 90% of
// the file, held-out windows (heldOut) in the last 10%; every position is
// scored.
type textTask struct {
	length  int
	chars   []rune // id -> character, in code point order
	ids     []int  // the file as ids
	split   int    // ids[:split] trains, ids[split:] is held out
	heldOut bool   // this view draws from the held-out part
}

func (t textTask) Name() string { return "text" }
func (t textTask) Vocab() int   { return len(t.chars) }
func (t textTask) SeqLen() int  { return t.length }

// Label is the character of id (see CharLabel); an id outside the
// vocabulary is "<id>", as in the other tasks.
func (t textTask) Label(id int) string {
	if id < 0 || id >= len(t.chars) {
		return "<" + strconv.Itoa(id) + ">"
	}
	return CharLabel(t.chars[id])
}

// CharLabel is the text task's label of one character: "␣" for a space, so
// that a space shows, else the character itself, raw, whatever it is (a
// newline, an escape character, a bidi override). Whoever writes a label
// for a person escapes it (package internal/escape); data keeps the real
// text.
func CharLabel(r rune) string {
	if r == ' ' {
		return "␣"
	}
	return string(r)
}

func (t textTask) Sample(rng *rand.Rand, tokens, targets []int, mask []float64) {
	lo, hi := 0, t.split
	if t.heldOut {
		lo, hi = t.split, len(t.ids)
	}
	start := lo + rng.IntN(hi-lo-t.length)
	copy(tokens, t.ids[start:start+t.length])
	copy(targets, t.ids[start+1:start+t.length+1])
	for i := range mask {
		mask[i] = 1
	}
}

// HeldOut is the task the held-out set is drawn from: for text, windows of
// the file's last 10%; for every other task the task itself (its held-out
// set is a separate random stream, see EvalSet).
func HeldOut(task Task) Task {
	if t, ok := task.(textTask); ok {
		t.heldOut = true
		return t
	}
	return task
}

// Encode turns text into the text task's ids; ok is false for a task that
// is not text. A character outside the vocabulary is an error naming it.
func Encode(task Task, text string) (ids []int, ok bool, err error) {
	t, isText := base(task).(textTask)
	if !isText {
		return nil, false, nil
	}
	for i, r := range []rune(text) {
		id, found := slices.BinarySearch(t.chars, r)
		if !found {
			return nil, true, errors.Errorf("character %s (at %d) is not in the vocabulary of the text the model was trained on (%d characters)", msg.Quote(string(r)), i, len(t.chars))
		}
		ids = append(ids, id)
	}
	return ids, true, nil
}

// IsText reports whether task is the text task, whose tokens are characters.
func IsText(task Task) bool {
	_, ok := base(task).(textTask)
	return ok
}

// newTextTask reads cfg.Path (cached while the file's size and time are
// unchanged) and checks it against cfg.Chars when that is set.
func newTextTask(cfg TaskConfig) (Task, error) {
	key := "task.path = " + msg.Quote(cfg.Path)
	ids, chars, err := readText(cfg.Path)
	if err != nil {
		return nil, errors.Wrap(err, key)
	}
	if cfg.Chars != "" && cfg.Chars != string(chars) {
		return nil, errors.Errorf("%s: the file's %d distinct characters differ from the %d the model was trained on (the file changed since)", key, len(chars), utf8.RuneCountInString(cfg.Chars))
	}
	split := int(float64(len(ids)) * (1 - HeldOutFraction))
	if need := cfg.Length + 2; split < need || len(ids)-split < need {
		return nil, errors.Errorf("%s: %d characters is too short for task.length = %d: the held-out last 10%% (%d characters) and the rest (%d) must each hold a window of %d",
			key, len(ids), cfg.Length, len(ids)-split, split, need)
	}
	return textTask{length: cfg.Length, chars: chars, ids: ids, split: split}, nil
}

// TextChars is the vocabulary of the text file at path: its distinct
// characters in code point order, what TaskConfig.Chars records.
func TextChars(path string) (string, error) {
	_, chars, err := readText(path)
	return string(chars), errors.Wrapf(err, "task.path = %s", msg.Quote(path))
}

type textFile struct {
	size  int64
	mtime time.Time
	ids   []int
	chars []rune
}

var (
	textMu    sync.Mutex
	textCache = map[string]textFile{}
)

// readText reads a UTF-8 text file into ids over its sorted distinct
// characters, refusing what is not one: missing, empty, binary (a NUL
// byte, invalid UTF-8), too large, or with more than MaxSymbols characters.
func readText(path string) ([]int, []rune, error) {
	if path == "" {
		return nil, nil, errors.New("the text task needs task.path, a UTF-8 text file")
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, nil, errors.Wrap(err, "reading the text")
	}
	textMu.Lock()
	defer textMu.Unlock()
	if f, ok := textCache[path]; ok && f.size == info.Size() && f.mtime.Equal(info.ModTime()) {
		return f.ids, f.chars, nil
	}
	src, err := safefile.ReadLimit(path, MaxTextBytes, "the text task reads")
	switch {
	case err != nil:
		return nil, nil, errors.Wrap(err, "reading the text")
	case len(src) == 0:
		return nil, nil, errors.New("the file is empty")
	case !utf8.Valid(src) || slices.Contains(src, 0):
		return nil, nil, errors.New("not UTF-8 text (it holds a NUL byte or invalid UTF-8: a binary file?)")
	}
	text := []rune(string(src))
	chars := slices.Compact(slices.Sorted(slices.Values(text)))
	if len(chars) > MaxSymbols {
		return nil, nil, errors.Errorf("%d distinct characters, more than the %d a vocabulary may hold", len(chars), MaxSymbols)
	}
	ids := make([]int, len(text))
	for i, r := range text {
		ids[i], _ = slices.BinarySearch(chars, r)
	}
	textCache[path] = textFile{info.Size(), info.ModTime(), ids, chars}
	return ids, chars, nil
}

// validateText checks the text task's keys; the file itself is read by New.
func (c TaskConfig) validateText() error {
	switch {
	case c.Path == "":
		return errors.New("task.path: the text task needs a UTF-8 text file (task: {name: text, path: FILE, length: T})")
	case c.Length < 1 || c.Length > MaxLength:
		return errors.Errorf("task.length = %d: must be in [1, %d]", c.Length, MaxLength)
	case c.MinLength != 0 && c.MinLength != c.Length:
		return errors.Errorf("task.min_length = %d: the text task draws windows of one length", c.MinLength)
	}
	return nil
}

// Char is the character of id in the text task; ok is false for any other
// task or an id outside the vocabulary.
func Char(task Task, id int) (r rune, ok bool) {
	t, isText := base(task).(textTask)
	if !isText || id < 0 || id >= len(t.chars) {
		return utf8.RuneError, false
	}
	return t.chars[id], true
}

// Brackets maps the id of each closing bracket of the text task's
// vocabulary to its opening bracket's (")" to "(", "]" to "[", "}" to
// "{"), for the pairs whose both halves the text holds; nil for any other
// task or a text without a pair.
func Brackets(task Task) map[int]int {
	t, ok := base(task).(textTask)
	if !ok {
		return nil
	}
	var pairs map[int]int
	for _, p := range []string{"()", "[]", "{}"} {
		open, okOpen := slices.BinarySearch(t.chars, rune(p[0]))
		closing, okClose := slices.BinarySearch(t.chars, rune(p[1]))
		if okOpen && okClose {
			if pairs == nil {
				pairs = map[int]int{}
			}
			pairs[closing] = open
		}
	}
	return pairs
}
