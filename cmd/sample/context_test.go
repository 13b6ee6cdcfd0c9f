package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/generate"
	"github.com/attnscope/attnscope/internal/cli/clitest"
	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/open/opentest"
	"github.com/attnscope/attnscope/tokenizer"
)

// croppedGreedy is the reference of writing past a context of size: a
// full forward of the last size tokens at every step (opentest.Logits, a
// graph of the test's own) and its argmax appended, as nanoGPT's
// sample.py does; n tokens, or up to the first of stops.
func croppedGreedy(t *testing.T, m *model.Model, prompt []int, n, size int, stops []int) []int {
	t.Helper()
	seq := slices.Clone(prompt)
	for range n {
		window := seq[max(0, len(seq)-size):]
		b := &data.Batch{Size: 1, SeqLen: len(window), Tokens: window, Targets: window, Mask: make([]float64, len(window))}
		logits := opentest.Logits(t, m, b)
		next := model.Argmax(logits[(len(window)-1)*m.Config.Vocab:])
		seq = append(seq, next)
		if slices.Contains(stops, next) {
			break
		}
	}
	return seq[len(prompt):]
}

// cropNotes counts the crop notices among the lines of stderr.
func cropNotes(notes string) int {
	return strings.Count(notes, "cropped as nanoGPT's sample.py does")
}

// TestLearnedContextCrops: a lab model with a learned position table of 24
// writes past it, as nanoGPT does, instead of refusing: -n 40 after a
// prompt of 2, and a prompt of 30 itself, write the reference's tokens
// with the KV cache and without, and say so once on stderr.
func TestLearnedContextCrops(t *testing.T) {
	op := opentest.Induction(t)
	p := printer{task: op.Task}
	long := make([]int, 30)
	for i := range long {
		long[i] = 1 + i%7
	}
	for _, c := range []struct {
		prompt []int
		n      int
	}{{[]int{1, 2}, 40}, {long, 5}} {
		want := croppedGreedy(t, op.Model, c.prompt, c.n, 24, nil)
		line := p.text(c.prompt) + " |"
		for _, id := range want {
			line += " " + p.label(id)
		}
		for _, cache := range [][]string{nil, {"-no-cache"}} {
			args := append([]string{induction, "-tokens", idList(c.prompt), "-n", strconv.Itoa(c.n)}, cache...)
			out, notes, err := sampleNoted(t, args...)
			if err != nil || out != line+"\n" || cropNotes(notes) != 1 || strings.Count(notes, "\n") != 1 {
				t.Errorf("%q: %v\nwrote  %q\nwant   %q\nstderr %q (want one crop notice)", args, err, out, line+"\n", notes)
			}
		}
	}
}

// TestMaxPositionEmbeddingsStopsUnlessCrop: a Llama (rotary positions,
// max_position_embeddings 64) refuses a -n or a prompt past its context
// with a line naming -crop; with -crop it writes what the cropping
// reference writes, with the cache and without, and says so once.
func TestMaxPositionEmbeddingsStopsUnlessCrop(t *testing.T) {
	// Its greedy text writes the tokenizer's EOS (2) at once: end at an id
	// it does not write instead.
	fixture := withEnds(t, filepath.Join("..", "..", "open", "hf", "testdata", "llama"), []int{95})
	op := openDir(t, fixture)
	if op.Model.Config.Context != 64 || op.Model.Config.PositionKind() != model.PositionRope {
		t.Fatalf("the fixture has context %d, positions %s; the test wants 64, rope", op.Model.Config.Context, op.Model.Config.PositionKind())
	}
	long := strings.TrimSpace(strings.Repeat("5 ", 65))
	for _, c := range []struct{ args []string }{
		{[]string{"-tokens", "1 5 6", "-n", "70"}},
		{[]string{"-tokens", long}},
	} {
		_, err := sample(t, append([]string{fixture}, c.args...)...)
		want := map[bool]string{
			true:  "-n 70: a prompt of 3 tokens leaves room for 62 more in the model's context of 64 (max_position_embeddings); -crop writes on from the last 64 tokens",
			false: "the prompt has 65 tokens, longer than the model's context of 64 (max_position_embeddings); -crop keeps its last 64 tokens",
		}[len(c.args) == 4]
		if err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", c.args, err, want)
		}
	}
	prompt := []int{1, 5, 6}
	ref := croppedGreedy(t, op.Model, prompt, 70, 64, op.EOS)
	if len(ref) < 63 {
		t.Fatalf("the reference ends after %d tokens (%v) at one of %v, before the context: the test needs a crop", len(ref), ref, op.EOS)
	}
	written := ref
	if slices.Contains(op.EOS, ref[len(ref)-1]) {
		written = ref[:len(ref)-1]
	}
	want := string(tokenizer.Decode(op.Tokenizer, append(slices.Clone(prompt), written...))) + "\n"
	for _, cache := range [][]string{nil, {"-no-cache"}} {
		out, notes, err := sampleNoted(t, append([]string{fixture, "-crop", "-tokens", "1 5 6", "-n", "70"}, cache...)...)
		if err != nil || out != escape.Text(want) || cropNotes(notes) != 1 {
			t.Errorf("-crop %v: %v\nwrote  %q\nwant   %q\nstderr %q", cache, err, out, escape.Text(want), notes)
		}
	}
}

// TestREADMENanoGPTCommand: the README's nanoGPT command, its flags as
// written, on a ckpt.pt and meta.pkl of nanoGPT's layout
// (open/nanogpt/testdata: a character model of context 32, whose
// vocabulary has no beginning-of-text token) starts from a newline, as
// nanoGPT's sample.py does, writes its 64 tokens past the context by
// cropping, and says both on stderr ("a prompt of 1 token"); -prompt
// with -n 200 writes 200.
func TestREADMENanoGPTCommand(t *testing.T) {
	args := readmeNanoGPTCommand(t)
	dir := t.TempDir()
	for from, to := range map[string]string{
		filepath.Join("bias", "ckpt.pt"): filepath.Join("out-shakespeare-char", "ckpt.pt"),
		"meta.pkl":                       filepath.Join("data", "shakespeare_char", "meta.pkl"),
	} {
		b, err := os.ReadFile(filepath.Join("..", "..", "open", "nanogpt", "testdata", from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(to)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	op, err := open.Open(filepath.Join(dir, "out-shakespeare-char", "ckpt.pt"), open.Options{Vocab: filepath.Join(dir, "data", "shakespeare_char", "meta.pkl")})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		extra  []string
		prompt string
		n      int
	}{{nil, "\n", pretrainedN}, {[]string{"-prompt", "The keeper wrote:", "-n", "200"}, "The keeper wrote:", 200}} {
		ids, err := op.Tokenizer.Encode(c.prompt)
		if err != nil {
			t.Fatal(err)
		}
		ref := croppedGreedy(t, op.Model, ids, c.n, 32, nil)
		want := escape.Text(c.prompt+string(tokenizer.Decode(op.Tokenizer, ref))) + "\n"
		out, notes, err := sampleNoted(t, append(slices.Clone(args), c.extra...)...)
		newline := strings.Count(notes, "starting from a newline, as nanoGPT's sample.py does")
		crop := fmt.Sprintf("a prompt of %s and -n %d pass the model's context of 32", msg.Count(len(ids), "token"), c.n)
		if err != nil || out != want || cropNotes(notes) != 1 || !strings.Contains(notes, crop) || newline != b2i(c.extra == nil) {
			t.Errorf("%q: %v\nwrote  %q\nwant   %q\nstderr %q", append(args, c.extra...), err, out, want, notes)
		}
	}
}

// idList is ids as -tokens takes them.
func idList(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, " ")
}

// readmeNanoGPTCommand is the arguments of the README's sample line on
// nanoGPT's out-shakespeare-char/ckpt.pt, as written.
func readmeNanoGPTCommand(t *testing.T) []string {
	t.Helper()
	for _, c := range clitest.READMECommands(t, filepath.Join("..", ".."), "sample") {
		if len(c.Args) > 0 && c.Args[0] == "out-shakespeare-char/ckpt.pt" {
			return c.Args
		}
	}
	t.Fatal("the README gives no sample line on out-shakespeare-char/ckpt.pt")
	return nil
}

// TestWindowBound: past the context the memory bound is the window's
// (its cache and the forward of a crop), whatever -n: on GPT-2 small's
// shape (only its config is read) one row of -n MaxInt fits, 1024 rows do
// not and the refusal names the most -samples that fit.
func TestWindowBound(t *testing.T) {
	big := &model.Model{Dtype: tensor.Float32, Config: model.Config{Vocab: 50257, Context: 1024, DModel: 768, Heads: 12, Layers: 12, MLP: true, DFF: 3072}}
	plan, err := planContinuation(big.Config, true, false, []int{1, 2}, math.MaxInt)
	if err != nil || plan.window != 1024 || len(plan.feed) != 2 {
		t.Fatalf("-n MaxInt on a learned table: plan %+v, %v; want a window of 1024", plan, err)
	}
	bound := memoryBound{big, true}
	if err := bound.checkPlan(1, plan); err != nil {
		t.Errorf("one row: %v", err)
	}
	err = bound.checkPlan(1024, plan)
	want := regexp.MustCompile(`^-samples 1024: writing past the model's context of 1024 positions, 1024 rows need an estimated \d+\.\d [GT]iB for the window and the forward pass of a crop \(limit 8\.0 GiB\); use -samples (\d+) or less$`)
	m := want.FindStringSubmatch(fmt.Sprint(err))
	if m == nil {
		t.Fatalf("1024 rows: %v, want a line matching %s", err, want)
	}
	most, _ := strconv.Atoi(m[1])
	fits := func(r int) bool { return generate.WindowMemoryNeed(big, r, 1024, true) <= model.MaxMemory }
	if !fits(most) || fits(most+1) {
		t.Errorf("%s: %d is not the largest -samples that fits", err, most)
	}
}
