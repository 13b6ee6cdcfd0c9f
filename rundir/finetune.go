package rundir

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/model"
)

// InitRecord is what a fine-tuning run (init_from) records of the
// pretrained model it starts from, when it starts: where it was, what it
// is, every file read with its size and SHA-256, and which of them are the
// tokenizer the run copied into its directory (InitCopy). The model's
// vocabulary and context are here because config.yaml's model section
// never holds them (they come from the task for the lab's own runs).
type InitRecord struct {
	Path    string       `yaml:"path" json:"path"`     // absolute: init_from resolved where train ran
	Source  string       `yaml:"source" json:"source"` // "Hugging Face GPT2LMHeadModel", "nanoGPT"
	Vocab   int          `yaml:"vocab" json:"vocab"`
	Context int          `yaml:"context" json:"context"`
	Files   []FileRecord `yaml:"files" json:"files"`
	// Tokenizer names, by base name, the files of Files the tokenizer was
	// read from; none for GPT-2's own tokenizer, which ships with the
	// program.
	Tokenizer []string `yaml:"tokenizer,omitempty" json:"tokenizer,omitempty"`
}

// Recorded reports whether the run recorded a pretrained model.
func (r InitRecord) Recorded() bool { return r.Path != "" }

// FileRecord is a file as a run read it: its absolute path, size and
// SHA-256 (hex).
type FileRecord struct {
	Path   string `yaml:"path" json:"path"`
	Size   int64  `yaml:"size" json:"size"`
	SHA256 string `yaml:"sha256" json:"sha256"`
}

// TokenizerNames are the tokenizer files a fine-tuning run may copy into
// its directory (as InitCopy names them).
var TokenizerNames = []string{"tokenizer.json", "vocab.json", "merges.txt", "meta.pkl"}

// InitCopy is the name in the run directory of the copy of the pretrained
// model's tokenizer file name (a base name of TokenizerNames). The prefix
// keeps a user's own tokenizer.json, in a directory given for a new run,
// from passing for a run's file and being overwritten.
func InitCopy(name string) string { return "init-" + name }

// isInitCopy reports whether name is InitCopy of a tokenizer file.
func isInitCopy(name string) bool {
	return slices.ContainsFunc(TokenizerNames, func(t string) bool { return name == InitCopy(t) })
}

// HashFile reads the file at path, a regular file, and returns its record.
func HashFile(path string) (FileRecord, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return FileRecord{}, errors.Wrap(err, path)
	}
	rec := FileRecord{Path: abs}
	rec.Size, rec.SHA256, err = hashCopy(abs, io.Discard)
	return rec, err
}

// hashCopy writes the content of the regular file at path to w and
// returns its size and SHA-256.
func hashCopy(path string, w io.Writer) (int64, string, error) {
	f, err := safefile.OpenRegular(path)
	if err != nil {
		return 0, "", errors.Wrap(err, path)
	}
	return hashFrom(f, path, w)
}

// hashFrom is hashCopy of the open file f, which it closes.
func hashFrom(f *os.File, path string, w io.Writer) (int64, string, error) {
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(h, w), f)
	if err != nil {
		return 0, "", errors.Wrapf(err, "reading %s", path)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// Check refuses a file whose content is no longer what the run recorded,
// naming it, both sizes and digests, and what to do.
func (r FileRecord) Check() error {
	now, err := HashFile(r.Path)
	if errors.Is(err, os.ErrNotExist) {
		return errors.Errorf("%s: is gone, and the run started from it: restore it, or start a new run", r.name())
	}
	if err != nil {
		return err
	}
	return r.same(now)
}

// name is the file's base name and where it is: the name shows whole,
// however long its directory.
func (r FileRecord) name() string {
	return msg.Clean(filepath.Base(r.Path)) + " (in " + msg.Clean(filepath.Dir(r.Path)) + ")"
}

func (r FileRecord) same(now FileRecord) error {
	if now.Size != r.Size || now.SHA256 != r.SHA256 {
		return errors.Errorf("%s: the file changed since the run started from it (recorded %d bytes, sha256 %s; found %d bytes, sha256 %s): restore it, or start a new run",
			r.name(), r.Size, prefix(r.SHA256), now.Size, prefix(now.SHA256))
	}
	return nil
}

// prefix is the first 12 hex digits of a digest, enough to tell two apart;
// a recorded one comes from a file, so through msg.Clean.
func prefix(digest string) string {
	if len(digest) > 12 {
		return msg.Clean(digest[:12]) + "..."
	}
	return msg.Clean(digest)
}

// CheckFiles checks every file of the record against its content now
// (FileRecord.Check): what a run does before it reads the pretrained model
// again.
func (r InitRecord) CheckFiles() error {
	for _, f := range r.Files {
		if err := f.Check(); err != nil {
			return err
		}
	}
	return nil
}

// TokenizerFile is the record of the tokenizer file name (a base name),
// and whether the run read one by that name.
func (r InitRecord) TokenizerFile(name string) (FileRecord, bool) {
	for _, f := range r.Files {
		if filepath.Base(f.Path) == name && slices.Contains(r.Tokenizer, name) {
			return f, true
		}
	}
	return FileRecord{}, false
}

// CopyTokenizer copies the tokenizer files of the record into the run
// directory dir (InitCopy), each checked, as it is copied, against the
// digest the run recorded.
func (r InitRecord) CopyTokenizer(dir string) error {
	for _, name := range r.Tokenizer {
		src, ok := r.TokenizerFile(name)
		if !ok {
			return errors.Errorf("init.tokenizer names %s, which init.files does not list", msg.Quote(name))
		}
		err := safefile.WriteFileAtomic(filepath.Join(dir, InitCopy(name)), func(w io.Writer) error {
			size, sum, err := hashCopy(src.Path, w)
			if err != nil {
				return err
			}
			return src.same(FileRecord{Size: size, SHA256: sum})
		})
		if err != nil {
			return errors.Wrap(err, "copying the tokenizer into the run directory")
		}
	}
	return nil
}

// OpenCopy opens the copy of the tokenizer file name in the run directory
// dir for its one read, never through a symbolic link (a run's files are
// never read through one: the open itself refuses it), refusing at once a
// copy whose size is not the recorded. The reads are hashed as they are
// served: CheckCopy, once the tokenizer is built from them, refuses a copy
// whose bytes are not the file the run recorded, so the bytes checked are
// the bytes parsed.
func (r InitRecord) OpenCopy(dir, name string) (*safefile.HashedFile, error) {
	rec, ok := r.TokenizerFile(name)
	if !ok {
		return nil, errors.Errorf("init.tokenizer names %s, which init.files does not list", msg.Quote(name))
	}
	path := filepath.Join(dir, InitCopy(name))
	opened, err := safefile.OpenOwn(path)
	if err != nil && !errors.Is(err, safefile.ErrLink) {
		err = errors.Wrap(err, path)
	}
	if err != nil {
		return nil, errors.Wrap(err, "the run's copy of the pretrained model's tokenizer")
	}
	f, err := safefile.Hashed(opened, path)
	if err != nil {
		return nil, errors.Wrap(err, path)
	}
	if f.Size() != rec.Size {
		err := r.CheckCopy(name, f)
		f.Close()
		return nil, err
	}
	return f, nil
}

// CheckCopy refuses the copy f of the tokenizer file name (OpenCopy), once
// the tokenizer is built from it, when the bytes read (and the rest of the
// file, hashed through the same descriptor) are not the file the run
// recorded.
func (r InitRecord) CheckCopy(name string, f *safefile.HashedFile) error {
	rec, ok := r.TokenizerFile(name)
	if !ok {
		return errors.Errorf("init.tokenizer names %s, which init.files does not list", msg.Quote(name))
	}
	now, err := f.Sum()
	if err != nil {
		return errors.Wrap(err, "the run's copy of the pretrained model's tokenizer")
	}
	if now.Size != rec.Size || now.SHA256 != rec.SHA256 {
		return errors.Errorf("%s: not the copy of %s the run made (recorded %d bytes, sha256 %s; found %d bytes, sha256 %s)",
			msg.Clean(f.Name()), msg.Clean(rec.Path), rec.Size, prefix(rec.SHA256), now.Size, prefix(now.SHA256))
	}
	return nil
}

// Pretrained is the model a fine-tuning run starts from, as its config
// needs it: the model's config and the record of what was read.
type Pretrained struct {
	Model  model.Config
	Record InitRecord
}

// OpenPretrained opens the pretrained model that init_from names (package
// train's OpenPretrained, through package open).
type OpenPretrained func(initFrom string) (Pretrained, error)

// FineTunes reports whether the run starts from a pretrained model.
func (c Config) FineTunes() bool { return c.InitFrom != "" }

// fromPretrained decodes a config that names init_from over the pretrained
// model's config, after checking what it can without the model, so that a
// bad train.lr is refused before the weights are read. The model section
// may repeat the pretrained model's values; a key that disagrees is
// refused naming it and both values; model.dropout and model.attention
// (training's dropout, the graph's ops) may differ.
func fromPretrained(name string, src []byte, sets []string, dec decoder, first Config, open OpenPretrained) (Config, error) {
	if open == nil {
		return Config{}, errors.Errorf("%s: init_from = %s names a pretrained model, which only train opens", name, msg.Quote(first.InitFrom))
	}
	if err := first.checkWithoutModel(); err != nil {
		return Config{}, errors.Wrap(err, source(name, sets, err))
	}
	pre, err := open(first.InitFrom)
	if err != nil {
		return Config{}, errors.Wrapf(err, "init_from = %s", msg.Quote(first.InitFrom))
	}
	base := DefaultConfig()
	path := base.Model.Attention // the graph's ops are the run's, as for any run
	base.Model = pre.Model
	base.Model.Attention = path
	cfg, err := dec.decode(base, name, src, sets)
	if err != nil {
		return Config{}, err
	}
	given := cfg.Model
	given.Dropout, given.Attention = pre.Model.Dropout, pre.Model.Attention
	if diff := ConfigDiff(Config{Model: given}, Config{Model: pre.Model}, "given", "pretrained"); diff != "" {
		return Config{}, errors.Errorf("init_from = %s: the model section disagrees with the pretrained model (%s); leave the model section out (only model.dropout and model.attention may differ)",
			msg.Quote(first.InitFrom), diff)
	}
	cfg.Init = pre.Record
	return cfg, nil
}

// checkWithoutModel is what Validate checks of a fine-tuning config before
// the pretrained model is read: the task and the train section.
func (c Config) checkWithoutModel() error {
	if err := c.checkFineTuneTask(); err != nil {
		return err
	}
	if err := c.Task.Validate(); err != nil {
		return err
	}
	return c.Train.validate()
}

// checkFineTuneTask refuses a fine-tuning run on anything but text, and
// keys it cannot use.
func (c Config) checkFineTuneTask() error {
	switch {
	case c.Task.Name != data.Text:
		return errors.Errorf("init_from = %s: task.name = %s, but fine-tuning trains on text (task: {name: text, path: FILE, length: T}), tokenized with the pretrained model's tokenizer",
			msg.Quote(c.InitFrom), msg.Quote(c.Task.Name))
	case c.Task.Chars != "":
		return errors.New("task.chars: a fine-tuning run's text is the pretrained model's tokens, not characters")
	case len(c.Train.EvalLengths) > 0:
		return errors.Errorf("train.eval_lengths = %v: not with init_from (a pretrained model's text is evaluated at task.length)", c.Train.EvalLengths)
	}
	return nil
}

// validateFineTune is Validate's check of the model and the task of a
// fine-tuning run: the record of the pretrained model, and windows of
// task.length tokens the model can read.
func (c Config) validateFineTune() error {
	if err := c.checkFineTuneModel(); err != nil {
		return err
	}
	if err := c.Train.validate(); err != nil {
		return err
	}
	est := c.EstimateBytes()
	weights := c.Model.EstimateBytes(0, 0)
	return model.CheckMemory(est, fmt.Sprintf("fine-tuning %s (its weights, gradients and Adam moments take %s; the graphs of %d training windows of %d tokens and the evaluation %s)",
		c.Init.Source, msg.Bytes(weights), c.Train.BatchSize, c.Task.Length, msg.Bytes(est-weights)),
		"reduce train.batch_size, train.eval_size or task.length (the pretrained model's size is fixed)")
}

// checkFineTuneModel checks what reading a fine-tuned model needs: the
// task, the model, the record, and task.length within a learned position
// table.
func (c Config) checkFineTuneModel() error {
	if err := c.checkFineTuneTask(); err != nil {
		return err
	}
	if err := c.Task.Validate(); err != nil {
		return err
	}
	if err := c.Model.Validate(); err != nil {
		return err
	}
	switch r := c.Init; {
	case !r.Recorded():
		return errors.Errorf("init_from = %s: the run config holds no record of the pretrained model (init)", msg.Quote(c.InitFrom))
	case r.Vocab != c.Model.Vocab || r.Context != c.Model.Context:
		return errors.Errorf("init: vocab %d and context %d, but the model has %d and %d", r.Vocab, r.Context, c.Model.Vocab, c.Model.Context)
	case len(r.Files) == 0:
		return errors.New("init.files: empty; a run records every file of the pretrained model it read")
	}
	for _, name := range c.Init.Tokenizer {
		if !slices.Contains(TokenizerNames, name) {
			return errors.Errorf("init.tokenizer: %s is not a tokenizer file (want one of %v)", msg.Quote(name), TokenizerNames)
		}
		if _, ok := c.Init.TokenizerFile(name); !ok {
			return errors.Errorf("init.tokenizer names %s, which init.files does not list", msg.Quote(name))
		}
	}
	if limit := c.Model.MaxLength(); limit > 0 && c.Task.Length > limit {
		return errors.Errorf("task.length = %d: longer than the pretrained model's context of %d (its learned position table)", c.Task.Length, limit)
	}
	return nil
}
