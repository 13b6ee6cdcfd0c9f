package data

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/tokenizer"
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
//
// Read through a tokenizer (NewTokenText: a pretrained model's text), the
// ids are the tokenizer's instead, chars is nil and vocab is the model's.
type textTask struct {
	length  int
	chars   []rune // id -> character, in code point order
	ids     []int  // the file as ids
	split   int    // ids[:split] trains, ids[split:] is held out
	heldOut bool   // this view draws from the held-out part

	tok   tokenizer.Tokenizer // nil for characters
	vocab int                 // the model's vocabulary, with tok
}

func (t textTask) Name() string { return "text" }
func (t textTask) SeqLen() int  { return t.length }

func (t textTask) Vocab() int {
	if t.tok != nil {
		return t.vocab
	}
	return len(t.chars)
}

// Label is the character of id (see CharLabel), or the token's text
// (TokenLabel); an id outside the vocabulary is "<id>", as in the other
// tasks.
func (t textTask) Label(id int) string {
	if t.tok != nil {
		return TokenLabel(t.tok, id)
	}
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
	if t.ids == nil {
		panic("data: a text task made by Vocabulary has no file to draw windows from (check HasWindows)")
	}
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
	if t.tok != nil {
		ids, err = t.tok.Encode(text)
		return ids, true, err
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

// IsText reports whether task is the text task, read character by character
// or through a tokenizer (IsCharText tells them apart).
func IsText(task Task) bool {
	_, ok := base(task).(textTask)
	return ok
}

// IsCharText reports whether task is the text task read character by
// character, not through a pretrained model's tokenizer.
func IsCharText(task Task) bool {
	t, ok := base(task).(textTask)
	return ok && t.tok == nil
}

// TextFile is what a run records of the text task's file when training
// reads it: where it was and what it held.
type TextFile struct {
	Path   string `yaml:"path" json:"path"`     // absolute: task.path resolved where train ran
	Size   int64  `yaml:"size" json:"size"`     // bytes
	SHA256 string `yaml:"sha256" json:"sha256"` // hex SHA-256 of the bytes
}

// Recorded reports whether the run recorded its text file (runs written
// before the record was kept have none).
func (f TextFile) Recorded() bool { return f.SHA256 != "" }

// RecordText reads the text file at path (relative to the working
// directory) and returns the record a run keeps of it and its vocabulary,
// the distinct characters in code point order.
func RecordText(path string) (TextFile, string, error) {
	key := "task.path = " + msg.Quote(path)
	abs, err := filepath.Abs(path)
	if err != nil {
		return TextFile{}, "", errors.Wrap(err, key)
	}
	f, err := readText(abs)
	if err != nil {
		return TextFile{}, "", errors.Wrap(err, key)
	}
	return TextFile{Path: abs, Size: f.size, SHA256: f.sha256}, string(f.chars), nil
}

// Relocate is cfg with its text file read from path instead of where the
// run recorded it (a copy of the file moved elsewhere; the content must
// still match the record). A path of "" or any other task leaves cfg as it
// is.
func Relocate(cfg TaskConfig, path string) (TaskConfig, error) {
	if cfg.Name != Text || path == "" {
		return cfg, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return cfg, errors.Wrapf(err, "-data %s", msg.Quote(path))
	}
	if !cfg.File.Recorded() {
		cfg.Path = abs
		return cfg, nil
	}
	cfg.File.Path = abs
	return cfg, nil
}

// TextLocation is the file the text task of cfg reads: the recorded
// absolute path, or task.path as written for a run that recorded none.
func TextLocation(cfg TaskConfig) string {
	if cfg.File.Recorded() {
		return cfg.File.Path
	}
	return cfg.Path
}

// newTextTask reads the file of cfg (TextLocation) and checks it against
// what the run recorded: its size and SHA-256 (cfg.File) and its
// characters (cfg.Chars), each when set.
func newTextTask(cfg TaskConfig) (Task, error) {
	path, key := TextLocation(cfg), textKey(cfg)
	f, err := readText(path)
	if err != nil {
		return nil, errors.Wrap(err, key)
	}
	if err := checkRecord(key, cfg.File, f.size, f.sha256); err != nil {
		return nil, err
	}
	if cfg.Chars != "" && cfg.Chars != string(f.chars) {
		return nil, errors.Errorf("%s: the file's %d distinct characters differ from the %d the model was trained on (the file changed since)", key, len(f.chars), utf8.RuneCountInString(cfg.Chars))
	}
	split, err := splitText(key, len(f.ids), cfg.Length, "characters")
	if err != nil {
		return nil, err
	}
	return textTask{length: cfg.Length, chars: f.chars, ids: f.ids, split: split}, nil
}

// splitText is where the held-out last 10% of n ids (what) starts,
// refusing a text too short for a window of length in each part.
func splitText(key string, n, length int, what string) (int, error) {
	split := int(float64(n) * (1 - HeldOutFraction))
	if need := length + 2; split < need || n-split < need {
		return 0, errors.Errorf("%s: %d %s is too short for task.length = %d: the held-out last 10%% (%d %s) and the rest (%d) must each hold a window of %d",
			key, n, what, length, n-split, what, split, need)
	}
	return split, nil
}

// checkRecord refuses a file whose content is not what the run recorded
// (r, when it recorded one).
func checkRecord(key string, r TextFile, size int64, sha string) error {
	if r.Recorded() && (r.Size != size || r.SHA256 != sha) {
		return errors.Errorf("%s: the file's content differs from what training read (recorded %d bytes, sha256 %s; found %d bytes, sha256 %s): give -data with a copy of the file training read, or start a new run",
			key, r.Size, prefix(r.SHA256), size, prefix(sha))
	}
	return nil
}

// textKey names the text file of cfg in messages: task.path, and where it
// was read when that is elsewhere.
func textKey(cfg TaskConfig) string {
	key := "task.path = " + msg.Quote(cfg.Path)
	if path := TextLocation(cfg); path != cfg.Path {
		key += " (" + msg.Clean(path) + ")"
	}
	return key
}

// prefix is the first 12 hex digits of a digest, enough to tell two apart
// in a message; a recorded one comes from a file, so through msg.Clean.
func prefix(digest string) string {
	if len(digest) > 12 {
		return msg.Clean(digest[:12]) + "..."
	}
	return msg.Clean(digest)
}

// Vocabulary is the task of cfg without its data: for the text task, the
// characters the run recorded (cfg.Chars), with no file read, so a text
// model prints and reads characters on any machine; it draws no windows
// (HasWindows is false). Every other task is New(cfg), which reads nothing.
func Vocabulary(cfg TaskConfig) (Task, error) {
	if cfg.Name != Text {
		return New(cfg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Chars == "" {
		return nil, errors.New("task.chars is missing: the run config does not carry its text's characters")
	}
	chars := []rune(cfg.Chars)
	if !slices.IsSorted(chars) || len(slices.Compact(slices.Clone(chars))) != len(chars) {
		return nil, errors.New("task.chars: not the distinct characters of a text in code point order")
	}
	return textTask{length: cfg.Length, chars: chars}, nil
}

// HasWindows reports whether task can draw examples: false only for a text
// task made by Vocabulary, which has no file.
func HasWindows(task Task) bool {
	t, ok := base(task).(textTask)
	return !ok || t.ids != nil
}

// textFile is a text file read and checked once: its ids over its sorted
// distinct characters, and its size and SHA-256.
type textFile struct {
	size   int64
	mtime  time.Time
	sha256 string
	ids    []int
	chars  []rune
}

var (
	textMu    sync.Mutex
	textCache = map[string]textFile{}
)

// readText reads a UTF-8 text file (cached while its size and time are
// unchanged), refusing what is not one: missing, empty, binary (a NUL byte,
// invalid UTF-8), too large, or with more than MaxSymbols characters.
func readText(path string) (textFile, error) {
	if path == "" {
		return textFile{}, errors.New("the text task needs task.path, a UTF-8 text file")
	}
	info, err := os.Stat(path)
	if err != nil {
		return textFile{}, errors.Wrap(err, "reading the text")
	}
	textMu.Lock()
	defer textMu.Unlock()
	if f, ok := textCache[path]; ok && f.size == info.Size() && f.mtime.Equal(info.ModTime()) {
		return f, nil
	}
	src, err := ReadUTF8(path, "the text task reads")
	if err != nil {
		return textFile{}, err
	}
	text := []rune(string(src))
	chars := slices.Compact(slices.Sorted(slices.Values(text)))
	if len(chars) > MaxSymbols {
		return textFile{}, errors.Errorf("%d distinct characters, more than the %d a vocabulary may hold", len(chars), MaxSymbols)
	}
	ids := make([]int, len(text))
	for i, r := range text {
		ids[i], _ = slices.BinarySearch(chars, r)
	}
	sum := sha256.Sum256(src)
	f := textFile{size: int64(len(src)), mtime: info.ModTime(), sha256: hex.EncodeToString(sum[:]), ids: ids, chars: chars}
	textCache[path] = f
	return f, nil
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

// ReadUTF8 reads a text file as the text task reads its own: a regular
// file of at most MaxTextBytes (what names that limit in its error), not
// empty, UTF-8 with no NUL byte.
func ReadUTF8(path, what string) ([]byte, error) {
	src, err := safefile.ReadLimit(path, MaxTextBytes, what)
	switch {
	case err != nil:
		return nil, errors.Wrap(err, "reading the text")
	case len(src) == 0:
		return nil, errors.New("the file is empty")
	case !utf8.Valid(src) || slices.Contains(src, 0):
		return nil, errors.New("not UTF-8 text (it holds a NUL byte or invalid UTF-8: a binary file?)")
	}
	return src, nil
}
