package hf

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
)

// The files of a Hugging Face model directory Load looks for.
const (
	ConfigFile  = "config.json"
	WeightsFile = "model.safetensors"
	IndexFile   = "model.safetensors.index.json"
	// PickleFile is what older repositories ship instead of safetensors;
	// it is never read.
	PickleFile = "pytorch_model.bin"
)

// tokenizerFiles are the files a tokenizer may be read from, in the order
// Model.TokenizerFiles lists them.
var tokenizerFiles = []string{"tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json"}

// Bounds on the JSON files: a real config.json is a few kilobytes, the
// index of a model of hundreds of shards a few hundred.
const (
	maxConfigBytes = 1 << 20
	maxIndexBytes  = 16 << 20
)

// modelDir is the directory the user named.
type modelDir struct {
	name    string // as the user gave it, for messages
	real    string // absolute, with every symlink resolved
	notices io.Writer
	read    []string // the files read, as path names them
	// digests, when not nil, receives each file's digest, of the bytes
	// read (Options.Digests).
	digests map[string]safefile.Digest
}

func openDir(name string) (*modelDir, error) {
	info, err := os.Stat(name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, errors.Errorf("%s: no such directory", name)
	case err != nil:
		return nil, errors.Wrapf(unwrapPath(err), "%s", name)
	case !info.IsDir():
		return nil, errors.Errorf("%s: is not a directory (a Hugging Face model directory holds %s and %s)", name, ConfigFile, WeightsFile)
	}
	real, err := realPath(name)
	if err != nil {
		return nil, errors.Wrapf(unwrapPath(err), "%s", name)
	}
	return &modelDir{name: name, real: real}, nil
}

// realPath is path made absolute with every symlink resolved, so that two
// real paths compare whether the links in them were relative or absolute.
func realPath(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	return filepath.Abs(real)
}

// path is file inside the directory, as messages name it.
func (d *modelDir) path(file string) string { return filepath.Join(d.name, file) }

// shown is the path of file in the directory as a message names it: the
// file's name, which an index may give, through msg.Clean.
func (d *modelDir) shown(file string) string { return filepath.Join(d.name, msg.Clean(file)) }

// has reports whether the directory holds an entry called file (a link
// included, dangling or not).
func (d *modelDir) has(file string) bool {
	_, err := os.Lstat(d.path(file))
	return err == nil
}

// checkInside refuses a file that is missing, or a symlink leading out of
// the directory.
func (d *modelDir) checkInside(file string) error {
	real, err := realPath(d.path(file))
	if errors.Is(err, os.ErrNotExist) {
		return errors.Errorf("%s: no such file", d.shown(file))
	}
	if err != nil {
		return errors.Wrapf(unwrapPath(err), "%s", d.shown(file))
	}
	if !within(d.real, real) && !within(cacheBlobs(d.real), real) {
		return errors.Errorf("%s: is a symlink to %s, outside %s; only files inside the model directory are read (copy the file in)",
			d.shown(file), msg.Clean(real), d.name)
	}
	return nil
}

// within reports whether path is dir or below it; no path is within "".
func within(dir, path string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// cacheBlobs is the blobs directory of the Hugging Face cache repository
// whose snapshot dir is (models--gpt2/snapshots/<revision>, whose files
// are links to models--gpt2/blobs/<hash>), or "" when dir is not one: the
// hub's own download layout, whose links are the repository's files.
func cacheBlobs(dir string) string {
	snapshots := filepath.Dir(dir)
	repo := filepath.Dir(snapshots)
	if filepath.Base(snapshots) != "snapshots" || !strings.HasPrefix(filepath.Base(repo), "models--") {
		return ""
	}
	return filepath.Join(repo, "blobs")
}

// readJSON reads the regular file called file inside the directory, of at
// most limit bytes, and notes it.
func (d *modelDir) readJSON(file string, limit int64) ([]byte, error) {
	if err := d.checkInside(file); err != nil {
		return nil, err
	}
	what := "a " + file + " may take"
	if d.digests == nil {
		raw, err := safefile.ReadLimit(d.path(file), limit, what)
		if err != nil {
			return nil, err
		}
		d.noteRead(file, int64(len(raw)))
		return raw, nil
	}
	f, err := safefile.OpenHashed(d.path(file))
	if err != nil {
		return nil, errors.Wrapf(unwrapPath(err), "%s", d.path(file))
	}
	defer f.Close()
	raw, err := f.ReadLimit(limit, what)
	if err != nil {
		return nil, err
	}
	if err := d.noteDigest(file, f); err != nil {
		return nil, err
	}
	d.noteRead(file, int64(len(raw)))
	return raw, nil
}

// noteDigest records the digest of file, read through f.
func (d *modelDir) noteDigest(file string, f *safefile.HashedFile) error {
	sum, err := f.Sum()
	if err != nil {
		return err
	}
	d.digests[d.path(file)] = sum
	return nil
}

// noteRead records that file was read and says so on the notices.
func (d *modelDir) noteRead(file string, size int64) {
	d.read = append(d.read, d.path(file))
	if d.notices != nil {
		fmt.Fprintf(d.notices, "reading %s (%s)\n", d.shown(file), msg.Bytes(float64(size)))
	}
}

// tokenizerFiles lists the tokenizer files the directory holds, each
// checked as every file read is (a symlink leading out is refused).
// TokenizerFiles lists the tokenizer files the model directory dir holds
// (Model.TokenizerFiles, without loading the model), each checked as Load
// checks them: a caller may read them while Load reads the weights.
func TokenizerFiles(dir string) ([]string, error) {
	d, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	return d.tokenizerFiles()
}

func (d *modelDir) tokenizerFiles() ([]string, error) {
	var out []string
	for _, file := range tokenizerFiles {
		if !d.has(file) {
			continue
		}
		if err := d.checkInside(file); err != nil {
			return nil, err
		}
		out = append(out, d.path(file))
	}
	return out, nil
}

// unwrapPath drops the *os.PathError around err so a message names the
// path once.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return errors.WithMessage(pe.Err, pe.Op)
	}
	return err
}

// lookedFor are the files of a model directory that opening it reads or
// looks for by name: config.json, the weights (the pickle's names too,
// which Load looks for to say what to convert) and every tokenizer file,
// those this package's readers take and those of transformers' that they
// do not yet (tokenizer.model, added_tokens.json, generation_config.json).
var lookedFor = append([]string{ConfigFile, "generation_config.json", WeightsFile, IndexFile, PickleFile, PickleFile + ".index.json",
	"tokenizer.model", "added_tokens.json"}, tokenizerFiles...)

// Inputs are the files of the model directory dir that opening it reads or
// may read: every name in lookedFor, whether the directory holds it or
// not, and the shards its index names, so that no output of a command
// replaces one or makes one the next opening would read
// (safefile.CheckOutput). It reads nothing but the index, within
// maxIndexBytes; an index it cannot parse names no shard (Load refuses it).
func Inputs(dir string) []string {
	d := &modelDir{name: dir}
	var out []string
	for _, file := range lookedFor {
		out = append(out, d.path(file))
	}
	raw, err := safefile.ReadLimit(d.path(IndexFile), maxIndexBytes, "a "+IndexFile+" may take")
	if err != nil {
		return out
	}
	placed, err := parseIndex(raw)
	if err != nil {
		return out
	}
	for _, shard := range shardNames(placed) {
		out = append(out, d.path(shard))
	}
	return out
}
