package initfrom

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
)

// Record is what a fine-tuning run (init_from) records of the
// pretrained model it starts from, when it starts: where it was, what it
// is, every file read with its size and SHA-256, and which of them are the
// tokenizer the run copied into its directory (CopyName). The model's
// vocabulary and context are here because config.yaml's model section
// never holds them (they come from the task for the lab's own runs).
type Record struct {
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
func (r Record) Recorded() bool { return r.Path != "" }

// FileRecord is a file as a run read it: its absolute path, size and
// SHA-256 (hex).
type FileRecord struct {
	Path   string `yaml:"path" json:"path"`
	Size   int64  `yaml:"size" json:"size"`
	SHA256 string `yaml:"sha256" json:"sha256"`
}

// TokenizerNames are the tokenizer files a fine-tuning run may copy into
// its directory (as CopyName names them).
var TokenizerNames = []string{"tokenizer.json", "vocab.json", "merges.txt", "meta.pkl"}

// CopyName is the name in the run directory of the copy of the pretrained
// model's tokenizer file name (a base name of TokenizerNames). The prefix
// keeps a user's own tokenizer.json, in a directory given for a new run,
// from passing for a run's file and being overwritten.
func CopyName(name string) string { return "init-" + name }

// IsCopy reports whether name is CopyName of a tokenizer file.
func IsCopy(name string) bool {
	return slices.ContainsFunc(TokenizerNames, func(t string) bool { return name == CopyName(t) })
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
func (r Record) CheckFiles() error {
	for _, f := range r.Files {
		if err := f.Check(); err != nil {
			return err
		}
	}
	return nil
}

// TokenizerFile is the record of the tokenizer file name (a base name),
// and whether the run read one by that name.
func (r Record) TokenizerFile(name string) (FileRecord, bool) {
	for _, f := range r.Files {
		if filepath.Base(f.Path) == name && slices.Contains(r.Tokenizer, name) {
			return f, true
		}
	}
	return FileRecord{}, false
}

// CopyTokenizer copies the tokenizer files of the record into the run
// directory dir (CopyName), each checked, as it is copied, against the
// digest the run recorded.
func (r Record) CopyTokenizer(dir string) error {
	for _, name := range r.Tokenizer {
		src, ok := r.TokenizerFile(name)
		if !ok {
			return errors.Errorf("init.tokenizer names %s, which init.files does not list", msg.Quote(name))
		}
		err := safefile.WriteFileAtomic(filepath.Join(dir, CopyName(name)), func(w io.Writer) error {
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
func (r Record) OpenCopy(dir, name string) (*safefile.HashedFile, error) {
	rec, ok := r.TokenizerFile(name)
	if !ok {
		return nil, errors.Errorf("init.tokenizer names %s, which init.files does not list", msg.Quote(name))
	}
	path := filepath.Join(dir, CopyName(name))
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
func (r Record) CheckCopy(name string, f *safefile.HashedFile) error {
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
