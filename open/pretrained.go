package open

import (
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/hf"
	"github.com/attnscope/attnscope/open/nanogpt"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/tokenizer"
)

// huggingFaceDir reports whether path is a Hugging Face model directory
// (it holds config.json, and is not one of the lab's run directories).
func huggingFaceDir(path string) (string, bool) {
	info, err := os.Stat(path)
	if err != nil || !info.IsDir() {
		return "", false
	}
	has := func(name string) bool { _, err := os.Lstat(filepath.Join(path, name)); return err == nil }
	return path, has(hf.ConfigFile) && !has(rundir.ConfigFile) && !has(rundir.CheckpointFile)
}

// openHuggingFace opens a Hugging Face model directory with its tokenizer,
// reading the tokenizer while the weights load.
func openHuggingFace(dir string, o Options) (*Opened, error) {
	files, err := hf.TokenizerFiles(dir)
	if err != nil {
		return nil, err
	}
	if o.NoText {
		files = nil // readTokenizer then reads nothing
	}
	type read struct {
		tok     tokenizer.Tokenizer
		note    string
		files   []string // read
		digests map[string]safefile.Digest
		err     error
	}
	tokenizerRead := make(chan read, 1)
	go func() {
		digests, done := map[string]safefile.Digest{}, ignoreRead
		if o.digests {
			done = recordDigest(digests)
		}
		tok, names, err := readTokenizer(files, done)
		tokenizerRead <- read{tok, readingNote(names), names, digests, err}
	}()
	m, err := hf.Load(dir, hf.Options{Notices: o.Notices, Digests: o.digests, Progress: o.Progress})
	t := <-tokenizerRead
	if err != nil {
		return nil, err
	}
	if t.note != "" {
		notef(o.Notices, "%s", t.note)
	}
	tok := t.tok
	switch {
	case t.err != nil && m.Arch == gpt2Arch:
		return nil, t.err
	case t.err != nil:
		// A tokenizer.json of a kind package tokenizer does not build
		// (a variant of a Llama-family file): the model still opens, on
		// token ids.
		notef(o.Notices, "note: %v; tokens show as ids and text cannot be given (-tokens takes ids)", t.err)
		tok = tokenizer.Unbuilt(m.Model.Config.Vocab, t.err)
	case tok != nil:
	case o.NoText:
		tok = tokenizer.IDs(m.Model.Config.Vocab)
	case m.Arch == gpt2Arch && m.Model.Config.Vocab == tokenizer.GPT2().Size():
		notef(o.Notices, "note: %s has no tokenizer files (tokenizer.json, or vocab.json and merges.txt); using GPT-2's own tokenizer", dir)
		tok = tokenizer.GPT2()
	default:
		notef(o.Notices, "note: %s has no tokenizer files (tokenizer.json, or vocab.json and merges.txt): tokens show as ids and text cannot be given (-tokens takes ids)", dir)
		tok = tokenizer.IDs(m.Model.Config.Vocab)
	}
	tok, ends := withSpecials(tok, m.Specials)
	op, err := pretrained(m.Model, tok, dir, "Hugging Face "+m.Arch, 0, ends...)
	if err != nil {
		return nil, err
	}
	op.Files, op.TokenizerFiles, op.Digests = append(m.Files, t.files...), t.files, m.Digests
	for f, d := range t.digests {
		op.Digests[f] = d
	}
	return op, nil
}

// gpt2Arch is the architecture whose tokenizer package tokenizer reads
// whole: a tokenizer file it refuses is an error, not a fallback.
const gpt2Arch = "GPT2LMHeadModel"

// specialIDs is a tokenizer whose beginning- and end-of-text ids are the
// ones the model's config.json names.
type specialIDs struct {
	tokenizer.Tokenizer
	bos, eos int
}

func (t specialIDs) BOS() int                    { return t.bos }
func (t specialIDs) EOS() int                    { return t.eos }
func (t specialIDs) Unwrap() tokenizer.Tokenizer { return t.Tokenizer }

// withSpecials is tok with the special ids config.json names, those the
// tokenizer has: its BOS is config.json's bos_token_id; its EOS the
// tokenizer's own when eos_token_id lists it, else the first id listed.
// ends are every end-of-text id: the tokenizer's and those listed.
func withSpecials(tok tokenizer.Tokenizer, s hf.Specials) (tokenizer.Tokenizer, []int) {
	bos, eos := tok.BOS(), tok.EOS()
	if s.BOS >= 0 && s.BOS < tok.Size() {
		bos = s.BOS
	}
	var listed, ends []int
	for _, id := range s.EOS {
		if id < tok.Size() {
			listed = append(listed, id)
		}
	}
	if eos >= 0 {
		ends = append(ends, eos)
	}
	for _, id := range listed {
		if !slices.Contains(ends, id) {
			ends = append(ends, id)
		}
	}
	if len(listed) > 0 && !slices.Contains(listed, eos) {
		eos = listed[0]
	}
	if bos == tok.BOS() && eos == tok.EOS() {
		return tok, ends
	}
	return specialIDs{tok, bos, eos}, ends
}

// readingNote is the notice naming the tokenizer files read, "" for none.
func readingNote(files []string) string {
	note := ""
	for i, f := range files {
		if i == 0 {
			note = "reading " + f
		} else {
			note += " and " + f
		}
	}
	return note
}

// readTokenizer reads a model directory's tokenizer from its files, and
// names the files it read: tokenizer.json, else vocab.json with
// merges.txt; nil when it has neither (openHuggingFace then builds GPT-2's
// own for a GPT-2 only). Each file is opened once (safefile.OpenHashed) and done is
// given it once the tokenizer is built from it. It runs beside the
// weights' reading, so it writes no notice.
func readTokenizer(files []string, done func(*safefile.HashedFile) error) (tokenizer.Tokenizer, []string, error) {
	has := map[string]string{}
	for _, f := range files {
		has[filepath.Base(f)] = f
	}
	return readTokenizerFiles(has, openHashed, done)
}

// openHashed opens a tokenizer file of a model directory for its one read.
func openHashed(path string) (*safefile.HashedFile, error) {
	return safefile.OpenHashed(path)
}

// ignoreRead is readTokenizerFiles' done for a reader that keeps no
// record of the files read.
func ignoreRead(*safefile.HashedFile) error { return nil }

// recordDigest is readTokenizerFiles' done that records the digest of each
// file read in digests: of the bytes the tokenizer was built from, and the
// rest of the file, hashed through the same descriptor.
func recordDigest(digests map[string]safefile.Digest) func(*safefile.HashedFile) error {
	return func(f *safefile.HashedFile) error {
		d, err := f.Sum()
		digests[f.Name()] = d
		return err
	}
}

// readTokenizerFiles reads the tokenizer of the files has maps by base
// name to their paths: tokenizer.json, else vocab.json with merges.txt;
// nil when it has none. One of vocab.json and merges.txt alone is refused,
// naming the other: it is half a tokenizer, not GPT-2's own. Each file is
// opened once, by open, and the tokenizer is built from what that one
// opening reads; done is then given each file read (to hash or check
// what was read), and its error comes before the tokenizer's: a file that
// was not the one expected explains why it did not parse.
func readTokenizerFiles(has map[string]string, open func(string) (*safefile.HashedFile, error), done func(*safefile.HashedFile) error) (tokenizer.Tokenizer, []string, error) {
	vocab, merges := has["vocab.json"], has["merges.txt"]
	switch {
	case has["tokenizer.json"] != "":
		return buildTokenizer([]string{has["tokenizer.json"]}, open, done, func(f []*safefile.HashedFile) (tokenizer.Tokenizer, error) {
			return tokenizer.DecodeTokenizerJSON(f[0], f[0].Name())
		})
	case vocab != "" && merges != "":
		return buildTokenizer([]string{vocab, merges}, open, done, func(f []*safefile.HashedFile) (tokenizer.Tokenizer, error) {
			return tokenizer.DecodeGPT2Files(f[0], f[1], f[0].Name(), f[1].Name())
		})
	case vocab != "":
		return nil, nil, halfGPT2(vocab, "merges.txt")
	case merges != "":
		return nil, nil, halfGPT2(merges, "vocab.json")
	}
	return nil, nil, nil
}

// buildTokenizer opens the files at paths (open), builds the tokenizer
// from them, gives each to done and closes it (readTokenizerFiles).
func buildTokenizer(paths []string, open func(string) (*safefile.HashedFile, error), done func(*safefile.HashedFile) error,
	build func([]*safefile.HashedFile) (tokenizer.Tokenizer, error)) (tokenizer.Tokenizer, []string, error) {
	var files []*safefile.HashedFile
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, p := range paths {
		f, err := open(p)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, f)
	}
	tok, err := build(files)
	for _, f := range files {
		if err := done(f); err != nil {
			return nil, nil, err
		}
	}
	return tok, paths, err
}

// halfGPT2 refuses one of a GPT-2 tokenizer's two files without the other.
func halfGPT2(present, missing string) error {
	return errors.Errorf("%s has no %s beside it: a GPT-2 tokenizer is vocab.json and merges.txt together (or one tokenizer.json)", present, missing)
}

// nanoGPTCheckpoint reports whether path is a nanoGPT checkpoint: a file
// that is a zip (torch.save's format, ckpt.pt), or a directory holding
// ckpt.pt (train.py's out_dir) and no run of the lab's.
func nanoGPTCheckpoint(path string) (string, bool) {
	info, err := os.Stat(path)
	if err != nil {
		return "", false
	}
	if info.IsDir() {
		ckpt := filepath.Join(path, NanoGPTFile)
		if _, err := os.Stat(filepath.Join(path, rundir.ConfigFile)); err == nil {
			return "", false
		}
		if st, err := os.Stat(ckpt); err == nil && st.Mode().IsRegular() {
			return ckpt, true
		}
		return "", false
	}
	if !info.Mode().IsRegular() {
		return "", false // a pipe or a device: opening it could block; the checkpoint reader refuses it
	}
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	magic := make([]byte, 4)
	_, err = io.ReadFull(f, magic)
	return path, err == nil && string(magic) == "PK\x03\x04"
}

// NanoGPTFile is the checkpoint nanoGPT's train.py writes in its out_dir.
const NanoGPTFile = "ckpt.pt"

// openNanoGPT opens a nanoGPT checkpoint with its tokenizer: meta.pkl's
// characters, else GPT-2's (nanoGPT's GPT-2 runs pad the vocabulary to
// 50304), else ids.
func openNanoGPT(path string, o Options) (*Opened, error) {
	m, err := nanogpt.Load(path, nanogpt.Options{Notices: o.Notices, Vocab: o.Vocab, Digests: o.digests})
	if err != nil {
		return nil, err
	}
	var tok tokenizer.Tokenizer
	switch {
	case m.Chars != nil:
		if tok, err = tokenizer.NewChars(m.Chars); err != nil {
			return nil, errors.Wrapf(err, "%s", m.Files[len(m.Files)-1])
		}
	case m.Model.Config.Vocab >= tokenizer.GPT2().Size():
		notef(o.Notices, "note: %s has no meta.pkl; using GPT-2's tokenizer, as nanoGPT does for its GPT-2 runs", path)
		tok = tokenizer.GPT2()
	default: // a character model whose meta.pkl is elsewhere: say where text comes from
		tok = tokenizer.Unbuilt(m.Model.Config.Vocab, errors.Errorf("no %s beside %s; -vocab FILE names one", nanogpt.MetaFile, path))
	}
	op, err := pretrained(m.Model, tok, path, "nanoGPT", m.Step)
	if err == nil {
		op.Files, op.Digests = m.Files, m.Digests
		if m.Chars != nil {
			op.TokenizerFiles = m.Files[1:]
		}
	}
	return op, err
}

// pretrained is a model trained elsewhere, opened for the views: its heads
// are scored on repeated random tokens of its tokenizer (data.RepeatedTokens,
// which draws none of the end-of-text ids ends: none given, the tokenizer's
// EOS alone). It has no run config: nothing here records how it was
// trained.
func pretrained(m *model.Model, tok tokenizer.Tokenizer, path, origin string, step int, ends ...int) (*Opened, error) {
	if tok.Size() > m.Config.Vocab {
		return nil, errors.Errorf("%s: its tokenizer has %d tokens, more than the model's vocabulary of %d", path, tok.Size(), m.Config.Vocab)
	}
	half := data.DefaultRepeatedHalf
	if limit := m.Config.MaxLength(); limit > 0 {
		half = min(half, limit/2) // [BOS] and both copies, less the last token, fit the position table
	}
	if ends == nil && tok.EOS() >= 0 {
		ends = []int{tok.EOS()}
	}
	task := data.NewRepeatedTokens(tok, m.Config.Vocab, half, ends)
	return &Opened{Model: m, Step: step, Checkpoint: path, Task: task, Origin: origin, Tokenizer: tok, EOS: ends}, nil
}
