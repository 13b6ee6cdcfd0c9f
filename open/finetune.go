package open

import (
	"os"
	"path/filepath"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/initfrom"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/open/nanogpt"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/tokenizer"
)

// ForFineTuning opens the model trained elsewhere at path for a run that
// fine-tunes it (init_from): Open, and the record of what was read
// (initfrom.Record: every file with its size and SHA-256, the
// tokenizer's by name). The weights, config.json, the index and meta.pkl
// are hashed as they are loaded, through the descriptor they are read
// from, so the digest recorded is of the bytes trained from, whatever
// replaces the files meanwhile (Opened.Digests). A lab's own run, and a
// model without a tokenizer (whose text could not be turned into its
// tokens), are refused.
func ForFineTuning(path string, o Options) (*Opened, initfrom.Record, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, initfrom.Record{}, errors.Errorf("%s: no such file or directory; fine-tuning starts from a Hugging Face model directory or a nanoGPT ckpt.pt", path)
	}
	o.digests = true
	op, err := Open(path, o)
	if err != nil {
		return nil, initfrom.Record{}, err
	}
	if len(op.Files) == 0 {
		return nil, initfrom.Record{}, errors.Errorf("%s: not a model trained elsewhere (a Hugging Face model directory, a nanoGPT ckpt.pt), which fine-tuning starts from", path)
	}
	var notBuilt *tokenizer.NotBuiltError
	switch _, err := op.Tokenizer.Encode("a"); {
	case errors.As(err, &notBuilt):
		return nil, initfrom.Record{}, errors.Errorf("%s: its tokenizer was not built (%v), so the text cannot be turned into its tokens", path, notBuilt.Why)
	case errors.Is(err, tokenizer.ErrNoTokenizer):
		return nil, initfrom.Record{}, errors.Errorf("%s: has no tokenizer (tokenizer.json, vocab.json and merges.txt, or a nanoGPT meta.pkl), so the text cannot be turned into its tokens", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, initfrom.Record{}, errors.Wrap(err, path)
	}
	rec := initfrom.Record{Path: abs, Source: op.Origin, Vocab: op.Model.Config.Vocab, Context: op.Model.Config.Context}
	for _, f := range op.Files {
		file, err := fileRecord(f, op.Digests)
		if err != nil {
			return nil, initfrom.Record{}, err
		}
		rec.Files = append(rec.Files, file)
	}
	for _, f := range op.TokenizerFiles {
		rec.Tokenizer = append(rec.Tokenizer, filepath.Base(f))
	}
	return op, rec, nil
}

// fileRecord is the record of the file at path: the digest its reader
// took as it loaded it. Every reader takes one (Options.digests), so a
// file without one is a reader that forgot, refused rather than hashed
// again by its path.
func fileRecord(path string, digests map[string]safefile.Digest) (initfrom.FileRecord, error) {
	d, ok := digests[path]
	if !ok {
		return initfrom.FileRecord{}, errors.Errorf("%s: read without its digest taken as it was read", msg.Clean(path))
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return initfrom.FileRecord{}, errors.Wrap(err, path)
	}
	return initfrom.FileRecord{Path: abs, Size: d.Size, SHA256: d.SHA256}, nil
}

// RunTokenizer reads the tokenizer of the fine-tuning run in dir whose
// config is cfg: the copies of the pretrained model's tokenizer files the
// run made (initfrom.CopyName), or GPT-2's own when it recorded none. Each
// copy is opened once, never through a link (initfrom.Record.OpenCopy),
// the tokenizer built from what that opening reads, and those bytes
// checked against the run's record (CheckCopy): no path is opened again
// between the check and the parse.
func RunTokenizer(dir string, cfg rundir.Config) (tokenizer.Tokenizer, error) {
	rec := cfg.Init
	if len(rec.Tokenizer) == 0 {
		return tokenizer.GPT2(), nil
	}
	has, names := map[string]string{}, map[string]string{}
	for _, name := range rec.Tokenizer {
		if _, ok := rec.TokenizerFile(name); !ok {
			return nil, errors.Errorf("init.tokenizer names %s, which init.files does not list", msg.Quote(name))
		}
		path := filepath.Join(dir, initfrom.CopyName(name))
		has[name], names[path] = path, name
	}
	open := func(path string) (*safefile.HashedFile, error) { return rec.OpenCopy(dir, names[path]) }
	check := func(f *safefile.HashedFile) error { return rec.CheckCopy(names[f.Name()], f) }
	if meta := has[nanogpt.MetaFile]; meta != "" {
		return runChars(meta, open, check, cfg.Model.Vocab)
	}
	tok, _, err := readTokenizerFiles(has, open, check)
	if tok == nil && err == nil {
		err = errors.Errorf("init.tokenizer = %v: not the files of a tokenizer", rec.Tokenizer)
	}
	return tok, err
}

// runChars is RunTokenizer's tokenizer of a nanoGPT model: the characters
// of the copy of its meta.pkl at path, opened by open and checked by check
// once read.
func runChars(path string, open func(string) (*safefile.HashedFile, error), check func(*safefile.HashedFile) error, vocab int) (tokenizer.Tokenizer, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	chars, err := nanogpt.DecodeChars(f, path, vocab)
	if err := check(f); err != nil {
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.NewChars(chars)
	return tok, errors.Wrapf(err, "%s", path)
}

// openFineTuned opens the checkpoint of a run that fine-tuned a model
// trained elsewhere as that model opens (Opened.Origin says fine-tuned from
// what): with its tokenizer (the copy in its run directory; a lone
// checkpoint has GPT-2's own, or ids) and the repeated-tokens task, with
// the run config the checkpoint carries (Opened.Run),
// whatever the pretrained model's directory holds
// now, or whether it still exists.
func openFineTuned(ck *checkpoint.Checkpoint, path, runDir string, o Options) (*Opened, error) {
	cfg := ck.Config
	if o.Data != "" {
		return nil, errors.Errorf("-data %s: %s fine-tuned %s, whose heads are read on repeated tokens of its tokenizer; no text file is read", msg.Quote(o.Data), path, msg.Clean(cfg.Init.Source))
	}
	var tok tokenizer.Tokenizer
	switch {
	case runDir != "":
		if err := rundir.CheckBelongs(runDir, cfg); err != nil {
			return nil, errors.Wrapf(err, "%s does not belong to the run in %s", path, runDir)
		}
		var err error
		if tok, err = RunTokenizer(runDir, cfg); err != nil {
			return nil, err
		}
	case len(cfg.Init.Tokenizer) == 0:
		tok = tokenizer.GPT2()
	default:
		notef(o.Notices, "note: %s is a lone checkpoint: its tokenizer is in the run directory that wrote it (%s): tokens show as ids", path, initfrom.CopyName(cfg.Init.Tokenizer[0]))
		tok = tokenizer.IDs(cfg.Model.Vocab)
	}
	op, err := pretrained(ck.Model, tok, path, "fine-tuned from "+cfg.Init.Source, ck.Step)
	if err != nil {
		return nil, err
	}
	// The run config is the checkpoint's own, so the run's logs and pages
	// pair with it; the task is the pretrained model's view.
	op.Run, op.RunDir = &cfg, runDir
	return op, nil
}
