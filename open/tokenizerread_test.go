package open

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/initfrom"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/rundir"
)

// dnaVocab and dnaVocab5 are two vocab.json files of the same size: four
// tokens, and five (an "n" for the fourth's id 3, and a fifth).
const (
	dnaVocab  = `{"a": 0, "c": 1, "g": 2, "t": 3}        `
	dnaVocab5 = `{"a": 0, "c": 1, "g": 2, "t": 3, "n": 4}`
	dnaMerges = "#version: 0.2\n"
)

// writeFiles writes files (base name -> content) into dir and returns
// their paths by base name.
func writeFiles(t *testing.T, dir string, files map[string]string) map[string]string {
	t.Helper()
	paths := map[string]string{}
	for name, content := range files {
		paths[name] = filepath.Join(dir, name)
		if err := os.WriteFile(paths[name], []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// swapAfterOpen opens a file with open and, the file at target, renames a
// file holding other over it before anything is read: what a writer racing
// the reader could do between a check by path and a parse by path.
func swapAfterOpen(t *testing.T, open func(string) (*safefile.HashedFile, error), target, other string) func(string) (*safefile.HashedFile, error) {
	return func(path string) (*safefile.HashedFile, error) {
		f, err := open(path)
		if err != nil || path != target {
			return f, err
		}
		replacement := filepath.Join(t.TempDir(), "replacement")
		if err := os.WriteFile(replacement, []byte(other), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(replacement, path); err != nil {
			t.Fatal(err)
		}
		return f, nil
	}
}

func digestOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestTokenizerDigestOfBytesParsed (issue 42, case 6a, for the tokenizer):
// init_from's tokenizer files are opened once, hashed as they are read and
// parsed from that one opening: with other bytes renamed over vocab.json
// after it is opened, the tokenizer is the one opened (4 tokens, not the
// replacement's 5) and the digest recorded is of the bytes it was built
// from. They were read by path, hashed before and after.
func TestTokenizerDigestOfBytesParsed(t *testing.T) {
	has := writeFiles(t, t.TempDir(), map[string]string{"vocab.json": dnaVocab, "merges.txt": dnaMerges})
	digests := map[string]safefile.Digest{}
	tok, read, err := readTokenizerFiles(has, swapAfterOpen(t, openHashed, has["vocab.json"], dnaVocab5), recordDigest(digests))
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(has["vocab.json"]); string(now) != dnaVocab5 {
		t.Fatal("the test swapped nothing")
	}
	if tok.Size() != 4 || len(read) != 2 {
		t.Errorf("built a tokenizer of %d tokens from %v, want the 4 of the vocab.json opened", tok.Size(), read)
	}
	for name, content := range map[string]string{"vocab.json": dnaVocab, "merges.txt": dnaMerges} {
		if d := digests[has[name]]; d.SHA256 != digestOf(content) || d.Size != int64(len(content)) {
			t.Errorf("%s: recorded %+v, want the digest of the bytes parsed, %s", name, d, digestOf(content))
		}
	}
}

// runWithCopies is a fine-tuning run's config whose tokenizer is the
// copies of vocab.json and merges.txt recorded with the digests of dna's
// files, and its directory holding those copies.
func runWithCopies(t *testing.T) (string, rundir.Config) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{initfrom.CopyName("vocab.json"): dnaVocab, initfrom.CopyName("merges.txt"): dnaMerges})
	cfg := rundir.DefaultConfig()
	cfg.Model.Vocab = 4
	cfg.Init = initfrom.Record{Path: "/models/dna", Vocab: 4, Tokenizer: []string{"vocab.json", "merges.txt"},
		Files: []initfrom.FileRecord{
			{Path: "/models/dna/vocab.json", Size: int64(len(dnaVocab)), SHA256: digestOf(dnaVocab)},
			{Path: "/models/dna/merges.txt", Size: int64(len(dnaMerges)), SHA256: digestOf(dnaMerges)},
		}}
	return dir, cfg
}

// TestRunTokenizerReadsCopiesOnce (issue 42, case 6c): a run's tokenizer
// copies are checked on the bytes they are parsed from. The copy opened
// is the copy parsed and checked, whatever is renamed over its path after
// the open; a link at a copy (to the very bytes recorded) is refused by
// the open itself; a copy of the recorded size but other bytes is refused
// naming it, though it parses. The copies were checked, then read again by
// their paths, following links.
func TestRunTokenizerReadsCopiesOnce(t *testing.T) {
	dir, cfg := runWithCopies(t)
	tok, err := RunTokenizer(dir, cfg)
	if err != nil || tok.Size() != 4 {
		t.Fatalf("the copies as made: %v", err)
	}
	rec := cfg.Init
	vocabCopy := filepath.Join(dir, initfrom.CopyName("vocab.json"))
	has := map[string]string{"vocab.json": vocabCopy, "merges.txt": filepath.Join(dir, initfrom.CopyName("merges.txt"))}
	names := map[string]string{has["vocab.json"]: "vocab.json", has["merges.txt"]: "merges.txt"}
	openCopy := func(path string) (*safefile.HashedFile, error) { return rec.OpenCopy(dir, names[path]) }
	check := func(f *safefile.HashedFile) error { return rec.CheckCopy(names[f.Name()], f) }
	tok, _, err = readTokenizerFiles(has, swapAfterOpen(t, openCopy, vocabCopy, dnaVocab5), check)
	if err != nil || tok.Size() != 4 {
		t.Errorf("a copy swapped after its opening: %v; want the copy opened, checked and parsed", err)
	}

	elsewhere := filepath.Join(t.TempDir(), "vocab.json")
	if err := os.WriteFile(elsewhere, []byte(dnaVocab), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(vocabCopy); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, vocabCopy); err != nil {
		t.Fatal(err)
	}
	if _, err := RunTokenizer(dir, cfg); err == nil || !strings.Contains(err.Error(), vocabCopy+" is a symbolic link; refusing to read through it") {
		t.Errorf("a linked copy: %v", err)
	}

	if err := os.Remove(vocabCopy); err != nil {
		t.Fatal(err)
	}
	other := strings.Replace(dnaVocab, `"t": 3`, `"u": 3`, 1) // parses, same size
	if err := os.WriteFile(vocabCopy, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := RunTokenizer(dir, cfg); err == nil || !strings.Contains(err.Error(), vocabCopy+": not the copy of /models/dna/vocab.json the run made") {
		t.Errorf("a copy of other bytes: %v", err)
	}
}
