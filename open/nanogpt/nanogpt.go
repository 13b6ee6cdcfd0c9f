package nanogpt

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/model"
)

// Options say what the user named besides the checkpoint.
type Options struct {
	// Notices receives one line per file read besides the checkpoint and
	// per note the user should see (stderr); nil drops them.
	Notices io.Writer
	// MaxBytes bounds the model's weights in memory (float32); 0 reads as
	// model.MaxMemory.
	MaxBytes float64
	// Vocab is the meta.pkl the user named (-vocab), "" for none: then
	// the meta.pkl beside the checkpoint is read, if there is one.
	Vocab string
	// Digests asks for Model.Digests: each file is hashed as it is read
	// (safefile.HashedFile), for a run that records what it started from.
	Digests bool
}

// Model is a nanoGPT checkpoint opened.
type Model struct {
	Model *model.Model
	// Chars are meta.pkl's itos, the text of each id; nil without a
	// meta.pkl (a model of GPT-2's tokens).
	Chars []string
	Step  int // iter_num, 0 when the checkpoint has none
	// Files are the files read: the checkpoint, then meta.pkl if any.
	Files []string
	// Digests are the size and SHA-256 of each of Files, of the bytes
	// loaded, when Options.Digests asked for them.
	Digests map[string]safefile.Digest
}

// MetaFile is the name of the vocabulary file nanoGPT's prepare.py writes
// beside a character dataset, and the one Load looks for beside a
// checkpoint.
const MetaFile = "meta.pkl"

// Load opens the nanoGPT checkpoint (train.py's ckpt.pt) at path, and its
// vocabulary: Options.Vocab, else a meta.pkl beside it. Every error is one
// line naming the file.
func Load(path string, o Options) (*Model, error) {
	if o.MaxBytes == 0 {
		o.MaxBytes = model.MaxMemory
	}
	var digests map[string]safefile.Digest
	// own reads a meta.pkl found beside the checkpoint: never through a
	// link, which could make it any file on the system.
	read, own := readFile(safefile.ReadLimit), readFile(safefile.ReadLimitOwn)
	if o.Digests {
		digests = map[string]safefile.Digest{}
		read, own = hashedRead(digests, safefile.OpenRegular), hashedRead(digests, safefile.OpenOwn)
	}
	ck, err := readCheckpoint(path, o.MaxBytes, digests)
	if err != nil {
		return nil, errors.Wrapf(err, "%s", path)
	}
	out := &Model{Model: ck.model, Step: ck.step, Files: []string{path}, Digests: digests}
	meta := o.Vocab
	if meta == "" {
		meta, read = filepath.Join(filepath.Dir(path), MetaFile), own
		if _, err := os.Lstat(meta); err != nil {
			if note := noVocabulary(path, ck); note != "" {
				notef(o.Notices, "%s", note)
			}
			return out, nil
		}
	}
	notef(o.Notices, "reading the characters of %s", msg.Clean(meta))
	if out.Chars, err = readMeta(meta, read, ck.model.Config.Vocab); err != nil {
		return nil, errors.Wrapf(err, "%s (the vocabulary of %s)", meta, path)
	}
	out.Files = append(out.Files, meta)
	return out, nil
}

// noVocabulary is the note for a checkpoint opened without a meta.pkl
// whose ids are too few to be GPT-2's tokens, "" for one that may be a
// model of GPT-2's tokens (the caller says which tokenizer it takes).
func noVocabulary(path string, ck *checkpoint) string {
	vocab := ck.model.Config.Vocab
	if vocab >= gpt2Vocab {
		return ""
	}
	where := "its dataset's " + MetaFile
	if ck.dataset != "" {
		where = fmt.Sprintf("nanoGPT's data/%s/%s", msg.Clean(ck.dataset), MetaFile)
	}
	return fmt.Sprintf("note: no %s beside %s and none named, but its %d ids are fewer than GPT-2's %d tokens: name %s with -vocab",
		MetaFile, msg.Clean(path), vocab, gpt2Vocab, where)
}

// gpt2Vocab is the size of GPT-2's vocabulary.
const gpt2Vocab = 50257

func notef(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// checkpoint is what Load takes from a ckpt.pt.
type checkpoint struct {
	model   *model.Model
	step    int
	dataset string // config's dataset, "" when it names none
}

// hashedRead is a readFile that hashes the file as it reads it (one open,
// by open, and one read), recording its digest in digests under path.
func hashedRead(digests map[string]safefile.Digest, open func(string) (*os.File, error)) readFile {
	return func(path string, limit int64, what string) ([]byte, error) {
		opened, err := open(path)
		if err != nil {
			return nil, err
		}
		f, err := safefile.Hashed(opened, path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		raw, err := f.ReadLimit(limit, what)
		if err != nil {
			return nil, err
		}
		digests[path], err = f.Sum()
		return raw, err
	}
}

// readCheckpoint reads a ckpt.pt: the pickle, then the model's tensors
// only, once their names, shapes and total size are checked. With digests
// not nil, the file is hashed as it is read and its digest recorded there
// (safefile.HashedFile: the zip is read out of order, so the digest takes
// a second pass through the same descriptor, which checks each range
// read).
func readCheckpoint(path string, maxBytes float64, digests map[string]safefile.Digest) (*checkpoint, error) {
	a, hashed, err := openCheckpoint(path, digests != nil)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	ck, err := readArchive(a, maxBytes)
	if err != nil || hashed == nil {
		return ck, err
	}
	digests[path], err = hashed.Sum()
	return ck, err
}

// openCheckpoint opens the torch zip at path, hashed as it is read when
// hash is set.
func openCheckpoint(path string, hash bool) (*archive, *safefile.HashedFile, error) {
	if !hash {
		a, err := openArchive(path)
		return a, nil, err
	}
	f, err := safefile.OpenHashed(path)
	if err != nil {
		return nil, nil, errors.Wrap(unwrapPath(err), "open")
	}
	a, err := newArchive(path, f, f.Size())
	return a, f, err
}

// readArchive reads the checkpoint's pickle and the model's tensors.
func readArchive(a *archive, maxBytes float64) (*checkpoint, error) {
	v, err := a.pickle()
	if err != nil {
		return nil, err
	}
	top, err := entries(v, "the checkpoint")
	if err != nil {
		return nil, err
	}
	args, state, err := parts(top)
	if err != nil {
		return nil, err
	}
	cfg, err := configOf(args)
	if err != nil {
		return nil, err
	}
	tensors, err := modelTensors(&cfg, state)
	if err != nil {
		return nil, err
	}
	values, err := readTensors(tensors, maxBytes)
	if err != nil {
		return nil, err
	}
	ck := &checkpoint{dataset: dataset(top)}
	if ck.step, err = iterNum(top); err != nil {
		return nil, err
	}
	ck.model, err = model.FromValues(cfg, values)
	return ck, err
}

// parts are the checkpoint's model_args and its model's state dict by
// nanoGPT's names (a compiled run's "_orig_mod." dropped).
func parts(top []entry) ([]entry, map[string]*tensorRef, error) {
	get := func(key string) ([]entry, error) {
		v, ok := lookup(top, key)
		if !ok {
			return nil, errors.Errorf("the checkpoint has no %s (it has %s)", key, keyList(top))
		}
		return entries(v, key)
	}
	args, err := get("model_args")
	if err != nil {
		return nil, nil, err
	}
	sd, err := get("model")
	if err != nil {
		return nil, nil, err
	}
	state := make(map[string]*tensorRef, len(sd))
	for _, e := range sd {
		t, ok := e.value.(*tensorRef)
		if !ok {
			return nil, nil, errors.Errorf("the model's %s is %s, want a tensor", msg.Quote(e.name()), typeName(e.value))
		}
		name, _ := strings.CutPrefix(e.name(), compiledPrefix)
		if _, dup := state[name]; dup {
			return nil, nil, errors.Errorf("the model's state dict has %s with and without %s", msg.Quote(name), compiledPrefix)
		}
		state[name] = t
	}
	return args, state, nil
}

// maxKeysShown bounds the keys keyList names: a pickle's dict may hold a
// hundred thousand.
const maxKeysShown = 8

// keyList names a dict's keys for a message, the first maxKeysShown of
// them.
func keyList(es []entry) string {
	if len(es) == 0 {
		return "no keys"
	}
	names := make([]string, 0, maxKeysShown)
	for _, e := range es[:min(len(es), maxKeysShown)] {
		names = append(names, msg.Clean(e.name()))
	}
	list := strings.Join(names, ", ")
	if len(es) > maxKeysShown {
		list += fmt.Sprintf(" and %d more", len(es)-maxKeysShown)
	}
	return msg.Shorten(list)
}

// iterNum is the checkpoint's iter_num, 0 when it has none.
func iterNum(top []entry) (int, error) {
	v, ok := lookup(top, "iter_num")
	if !ok {
		return 0, nil
	}
	n, err := intValue(v, "iter_num")
	if err == nil && n < 0 {
		err = errors.Errorf("iter_num = %d is negative", n)
	}
	return n, err
}

// dataset is the dataset train.py's config names, "" for none.
func dataset(top []entry) string {
	v, ok := lookup(top, "config")
	if !ok {
		return ""
	}
	config, err := entries(v, "config")
	if err != nil {
		return ""
	}
	name, _ := lookupString(config, "dataset")
	return name
}

func lookupString(es []entry, key string) (string, bool) {
	v, _ := lookup(es, key)
	s, ok := v.(string)
	return s, ok
}

// readTensors reads the model's tensors into float32, after checking that
// each is a contiguous float32 view, that together they fit maxBytes, and
// that no more is inflated than they hold (checkInflated).
func readTensors(tensors map[string]*tensorRef, maxBytes float64) (map[string]any, error) {
	names := sortedKeys(tensors)
	total := 0.0
	for _, name := range names {
		t := tensors[name]
		if err := t.readable(); err != nil {
			return nil, errors.Wrapf(err, "tensor %s", nanoName(name))
		}
		total += 4 * float64(t.len())
	}
	if total > maxBytes {
		return nil, errors.Errorf("the model's weights take %s as float32, more than the limit of %s", msg.Bytes(total), msg.Bytes(maxBytes))
	}
	if err := checkInflated(tensors, names, maxBytes); err != nil {
		return nil, err
	}
	values := make(map[string]any, len(tensors))
	for _, name := range names {
		v, err := tensors[name].float32s()
		if err != nil {
			return nil, errors.Wrapf(err, "tensor %s", nanoName(name))
		}
		values[name] = v
	}
	return values, nil
}

// checkInflated refuses, before any is inflated, storages that would
// inflate to more than the model's weights or than the file backs:
//   - a storage holding more bytes (its zip entry's declared size) than the
//     model's tensors use of it: reading a tensor streams its storage's
//     whole entry (so the CRC-32 is checked), and each parameter of a state
//     dict torch.save wrote is a storage of its own;
//   - storages whose reading would inflate more than maxBytes in all;
//   - storages declaring more than maxInflation times the bytes they take
//     in the zip (see maxInflation).
func checkInflated(tensors map[string]*tensorRef, names []string, maxBytes float64) error {
	used := map[*storage]uint64{}
	for _, name := range names {
		t := tensors[name]
		used[t.storage] += 4 * uint64(t.len())
	}
	inflated := 0.0
	for _, name := range names {
		s := tensors[name].storage
		size := s.file.UncompressedSize64
		if size > used[s] {
			return errors.Errorf("tensor %s: storage %s holds %d bytes, but the model's tensors use only %d of them (a state dict's tensor is a storage of its own)",
				nanoName(name), msg.Clean(s.file.Name), size, used[s])
		}
		inflated += float64(size)
	}
	if inflated > maxBytes {
		return errors.Errorf("reading the model's tensors would inflate %s of storages, more than the limit of %s", msg.Bytes(inflated), msg.Bytes(maxBytes))
	}
	declared, stored := 0.0, 0.0
	for s := range used {
		declared += float64(s.file.UncompressedSize64)
		stored += float64(s.file.CompressedSize64)
	}
	if declared > maxInflation*stored+inflationSlack {
		return errors.Errorf("the model's storages declare %s, %.0f times the %s they take in the file; this reader inflates at most %d times (torch.save stores storages uncompressed, and trained weights hardly deflate)",
			msg.Bytes(declared), declared/max(stored, 1), msg.Bytes(stored), maxInflation)
	}
	return nil
}

// maxInflation bounds how many times larger the model's storages are than
// the bytes they take in the zip, so a small file cannot make the reader
// inflate and hold a large model of zeros. torch.save stores storages
// uncompressed, and trained float32 weights deflate by about a tenth when
// a checkpoint is zipped again by hand; inflationSlack leaves a tiny model
// room for its zip's overheads.
const (
	maxInflation   = 32
	inflationSlack = 64 << 10
)
