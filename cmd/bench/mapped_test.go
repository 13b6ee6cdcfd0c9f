package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/open"
)

// tinyLlama is a Llama 3 shape small enough for a test, through
// llama3-8b's code: two shards of at most 20 kB.
var tinyLlama = llamaShape{vocab: 64, hidden: 32, layers: 2, heads: 4, kvHeads: 2, ffn: 48, context: 64, bos: 1, eos: 2, shardBytes: 20_000}

// withTinySetting adds a -decode-config "tiny-llama3" of tinyLlama for
// the test's length.
func withTinySetting(t *testing.T) {
	t.Helper()
	saved := decodeSettings
	decodeSettings = append(append([]decodeSetting(nil), saved...), decodeSetting{name: "tiny-llama3", describe: "a tiny Llama 3",
		prompt: 1, lengths: []int{6}, maps: 8, hf: &tinyLlama})
	t.Cleanup(func() { decodeSettings = saved })
}

// runTiny runs the bench on the tiny setting into dir.
func runTiny(t *testing.T, dir string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run([]string{"-decode", "-decode-config", "tiny-llama3", "-model-dir", dir, "-rounds", "1", "-reps", "1"}, &out, &errOut)
	return out.String(), errOut.String(), err
}

// TestMappedDecodeWritesThenReuses: the first run writes a sharded BF16
// directory that opens mapped as a Llama 3 of the shape and prints every
// figure; the second reuses it untouched; the same seed gives the same
// bytes in another directory.
func TestMappedDecodeWritesThenReuses(t *testing.T) {
	withTinySetting(t)
	dir := filepath.Join(t.TempDir(), "model")
	left := filepath.Join(filepath.Dir(dir), ".model.tmp-123") // an interrupted write's
	if err := os.Mkdir(left, 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runTiny(t, dir)
	if err != nil {
		t.Fatalf("first run: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "writing ") || !strings.Contains(errOut, "note: "+left+" is left from an interrupted write") {
		t.Errorf("first run did not say it writes, or did not name %s: %q", left, errOut)
	}
	for _, want := range []string{
		`round 1: probe [0-9.]+ GB/s, limit [0-9.]+ tokens/s; decoding [0-9.]+ tokens/s, [0-9.]+ of the limit`,
		`decoding [0-9.]+ tokens/s against a limit of [0-9.]+: [0-9.]+ of it \(medians over 1 round\)`,
		`forward over 8 tokens .* GFLOP/s; the float32 GEMM \(kernels.Gemm, 8 x 48 x 32, best\): [0-9.]+ GFLOP/s; ratio [0-9.]+`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(names) != 4 || !strings.HasSuffix(names[1], "model-00001-of-00002.safetensors") {
		t.Errorf("the directory holds %q, want config.json, two shards and their index", names)
	}
	opened, err := open.Open(dir, open.Options{Map: true, NoText: true})
	if err != nil {
		t.Fatal(err)
	}
	c := opened.Model.Config
	if c.DModel != 32 || c.Layers != 2 || c.Heads != 4 || c.KVHeadCount() != 2 || c.DFF != 48 || c.Vocab != 64 || c.TieEmbeddings || !opened.Model.HasStored() {
		t.Errorf("opened %+v, stored %v", c, opened.Model.HasStored())
	}
	before := modTimes(t, names)
	_, errOut, err = runTiny(t, dir)
	if err != nil || !strings.Contains(errOut, "reusing "+dir) {
		t.Errorf("second run: %v, stderr %q", err, errOut)
	}
	if after := modTimes(t, names); after != before {
		t.Errorf("the second run rewrote the directory: %s then %s", before, after)
	}
	other := filepath.Join(t.TempDir(), "again")
	if err := prepareModelDir(other, tinyLlama, modelSeed, nil, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		a, _ := os.ReadFile(name)
		b, _ := os.ReadFile(filepath.Join(other, filepath.Base(name)))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two writes of one seed", filepath.Base(name))
		}
	}
}

// modTimes are the files' modification times, one string.
func modTimes(t *testing.T, names []string) string {
	var s strings.Builder
	for _, name := range names {
		info, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		s.WriteString(info.ModTime().String() + strconv.FormatInt(info.Size(), 10) + ";")
	}
	return s.String()
}

// TestModelDirRefusals: the bench writes only into a new or empty
// directory with room for the model, and never over one that is not this
// shape's: each refusal one line, nothing written.
func TestModelDirRefusals(t *testing.T) {
	withTinySetting(t)
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir() // another shape's directory: its config differs
	if err := prepareModelDir(other, llamaShape{vocab: 64, hidden: 32, layers: 1, heads: 4, kvHeads: 2, ffn: 48, context: 64, bos: 1, eos: 2, shardBytes: 1e9}, modelSeed, nil, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	saved := freeBytes
	t.Cleanup(func() { freeBytes = saved })
	for _, c := range []struct {
		dir, want string
		free      int64
	}{
		{full, "holds notes.txt", 1 << 40},
		{other, "config.json is not this shape's", 1 << 40},
		{filepath.Join(t.TempDir(), "new"), "has 1000 B free", 1000},
		{filepath.Join(t.TempDir(), "no", "parent"), "its parent", 1 << 40},
	} {
		freeBytes = func(string) (int64, error) { return c.free, nil }
		_, _, err := runTiny(t, c.dir)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", c.dir, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(full, "config.json")); err == nil {
		t.Error("a refused directory was written into")
	}
	var out, errOut bytes.Buffer
	for _, args := range [][]string{
		{"-decode", "-decode-config", "tiny-llama3"},
		{"-decode", "-decode-config", "llama", "-model-dir", full},
		{"-model-dir", full},
	} {
		if err := run(args, &out, &errOut); err == nil || !strings.Contains(err.Error(), "-model-dir") {
			t.Errorf("run(%q): %v", args, err)
		}
	}
}

// TestLlama3_8BIsTheHubsShape: the directory llama3-8b writes holds what
// meta-llama/Llama-3.1-8B's model.safetensors.index.json gives (total_size
// 16,060,522,496 bytes, four shards), its config the hub's keys, computed
// without writing a byte.
func TestLlama3_8BIsTheHubsShape(t *testing.T) {
	small, shards, err := llama3_8B.dirFiles()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(small[indexFile], []byte(`"total_size": 16060522496`)) || len(shards) != 4 || shards[3].name != "model-00004-of-00004.safetensors" {
		t.Errorf("index %.80q..., %d shards", small[indexFile], len(shards))
	}
	for _, want := range []string{`"hidden_size": 4096`, `"intermediate_size": 14336`, `"num_key_value_heads": 8`, `"rope_type": "llama3"`, `"vocab_size": 128256`, `"tie_word_embeddings": false`} {
		if !bytes.Contains(small["config.json"], []byte(want)) {
			t.Errorf("config.json lacks %s", want)
		}
	}
}
