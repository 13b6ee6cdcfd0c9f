package nanogpt

import (
	"unicode/utf8"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
)

// ReadChars reads the characters of the meta.pkl at path for a model of
// vocab ids, by the rules Load reads one beside a checkpoint with; every
// error is one line naming the file.
func ReadChars(path string, vocab int) ([]string, error) {
	chars, err := readMeta(path, safefile.ReadLimit, vocab)
	return chars, errors.Wrapf(err, "%s", path)
}

// DecodeChars is ReadChars of the content of a meta.pkl its caller opened
// (so that the characters are read from the bytes the caller hashes),
// named name in errors.
func DecodeChars(r safefile.Sized, name string, vocab int) ([]string, error) {
	read := func(path string, limit int64, what string) ([]byte, error) {
		return safefile.ReadSized(r, path, limit, what)
	}
	chars, err := readMeta(name, read, vocab)
	return chars, errors.Wrapf(err, "%s", name)
}

// readFile reads a whole file of at most limit bytes (safefile.ReadLimit
// or ReadLimitOwn, or hashedRead's).
type readFile func(path string, limit int64, what string) ([]byte, error)

// readMeta reads the characters of a meta.pkl (prepare.py's pickle of
// {vocab_size, itos, stoi}, no globals) for a model of vocab ids: itos
// gives every id from 0 to vocab-1 one character, and stoi, which nanoGPT's
// sample.py encodes with, must be its inverse. read reads the file.
func readMeta(path string, read readFile, vocab int) ([]string, error) {
	raw, err := read(path, maxPickleBytes, "a nanoGPT meta.pkl needs")
	if errors.Is(err, safefile.ErrLink) {
		return nil, errors.Errorf("is a symbolic link; a %s beside a checkpoint is read only as a file of its own (copy the file in; inspect and sample also take -vocab FILE)", MetaFile)
	}
	if err != nil {
		return nil, errors.Wrap(unwrapPath(err), "read")
	}
	v, err := unpickler{}.load(raw)
	if err != nil {
		return nil, err
	}
	meta, err := entries(v, "the pickle")
	if err != nil {
		return nil, err
	}
	size, ok := lookup(meta, "vocab_size")
	if !ok {
		return nil, errors.Errorf("no vocab_size (it has %s)", keyList(meta))
	}
	n, err := intValue(size, "vocab_size")
	if err != nil {
		return nil, err
	}
	if n != vocab {
		return nil, errors.Errorf("vocab_size = %d, but the model has a vocabulary of %d", n, vocab)
	}
	chars, err := itos(meta, vocab)
	if err != nil {
		return nil, err
	}
	return chars, checkStoi(meta, chars)
}

// itos is meta's itos as a slice: ids 0 to vocab-1, each one character.
func itos(meta []entry, vocab int) ([]string, error) {
	v, ok := lookup(meta, "itos")
	if !ok {
		return nil, errors.Errorf("no itos (it has %s)", keyList(meta))
	}
	pairs, err := items(v, "itos")
	if err != nil {
		return nil, err
	}
	if len(pairs) != vocab {
		return nil, errors.Errorf("itos has %d entries, vocab_size is %d", len(pairs), vocab)
	}
	chars := make([]string, vocab)
	for _, p := range pairs {
		id, err := intValue(p.key, "an itos key")
		if err != nil {
			return nil, err
		}
		if id < 0 || id >= vocab || chars[id] != "" {
			return nil, errors.Errorf("itos has id %d twice or outside [0, %d)", id, vocab)
		}
		s, ok := p.value.(string)
		if !ok || utf8.RuneCountInString(s) != 1 {
			return nil, errors.Errorf("itos[%d] is %s, want one character", id, describeValue(p.value))
		}
		chars[id] = s
	}
	return chars, nil
}

// checkStoi refuses a stoi that is not the inverse of itos (chars).
func checkStoi(meta []entry, chars []string) error {
	v, ok := lookup(meta, "stoi")
	if !ok {
		return errors.Errorf("no stoi (it has %s)", keyList(meta))
	}
	pairs, err := entries(v, "stoi")
	if err != nil {
		return err
	}
	if len(pairs) != len(chars) {
		return errors.Errorf("stoi has %d entries, itos %d", len(pairs), len(chars))
	}
	for _, p := range pairs {
		id, err := intValue(p.value, "stoi["+msg.Quote(p.name())+"]")
		if err != nil {
			return err
		}
		if id < 0 || id >= len(chars) || chars[id] != p.name() {
			return errors.Errorf("stoi[%s] = %d, but itos does not map %d to it", msg.Quote(p.name()), id, id)
		}
	}
	return nil
}

// describeValue is a value for a message: a string quoted, else its type.
func describeValue(v any) string {
	if s, ok := v.(string); ok {
		return msg.Quote(s)
	}
	return typeName(v)
}
