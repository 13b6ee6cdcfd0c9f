package report

import (
	"strings"
	"testing"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/tokenizer"
)

// TestPatchWorkRefusedUpFront: -patch z-by-pos on every head of an
// 8B-shaped model (1 + 1,024 x 101 forwards of one 101-token sequence) is
// refused in one line naming -patch and its kind, the estimate and how to
// pick fewer heads; on one head (102 forwards) it is allowed, and so is
// resid_pre on one layer, where on every layer (3,233 forwards) it is
// refused.
func TestPatchWorkRefusedUpFront(t *testing.T) {
	task := data.NewRepeatedTokens(tokenizer.IDs(llama8B.Vocab), llama8B.Vocab, 51, nil)
	r := &Report{Options: Options{Samples: DefaultPretrainedSamples, Patch: PatchOptions{Kind: "z-by-pos"}}, Config: llama8B, Task: task}
	err := r.checkPerHeadTime(Subject{}, 101)
	if err == nil || strings.Contains(err.Error(), "\n") {
		t.Fatalf("every head of an 8B model: %v, want a one-line refusal", err)
	}
	for _, want := range []string{"-patch z-by-pos: the work on 1024 heads (103425 forwards", "pick fewer heads with -layer and -head"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err, want)
		}
	}
	r.Options.Layers, r.Options.Heads = Only(31), Only(0)
	if err := r.checkPerHeadTime(Subject{}, 101); err != nil {
		t.Errorf("-patch z-by-pos on 1 head: %v", err)
	}
	r.Options.Heads, r.Options.Patch.Kind = Pick{}, "resid_pre"
	if err := r.checkPerHeadTime(Subject{}, 101); err != nil {
		t.Errorf("-patch resid_pre -layer 31: %v", err)
	}
	r.Options.Layers = Pick{}
	if err := r.checkPerHeadTime(Subject{}, 101); err == nil || !strings.Contains(err.Error(), "(3233 forwards") {
		t.Errorf("-patch resid_pre on every layer: %v, want 3233 forwards refused", err)
	}
}

// TestCheckPatchFlags: -patch's flags without it, an unknown kind or
// metric, a missing or doubled input and logit difference without its
// tokens are refused in one line naming the flag; the defaults pass.
func TestCheckPatchFlags(t *testing.T) {
	clean := map[string]bool{"tokens": true, "patch": true, "corrupt-tokens": true}
	with := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for k, v := range clean {
			m[k] = v
		}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	for _, c := range []struct {
		given map[string]bool
		o     PatchOptions
		want  string // "" passes
	}{
		{map[string]bool{"corrupt-text": true}, PatchOptions{CorruptText: "x"}, "-corrupt-text is used only with -patch KIND"},
		{map[string]bool{"answer": true}, PatchOptions{Answer: "x"}, "-answer is used only with -patch"},
		{clean, PatchOptions{Kind: "zz", CorruptTokens: "1"}, `-patch "zz": no such kind; want one of resid_pre, resid_mid, resid_post, attn_out, mlp_out, z, q, k, v, pattern, z-by-pos`},
		{clean, PatchOptions{Kind: "z", CorruptTokens: "1", Metric: "kl"}, `-metric "kl": want logit-diff or loss`},
		{map[string]bool{"patch": true, "corrupt-tokens": true}, PatchOptions{Kind: "z", CorruptTokens: "1"}, "-patch needs the clean input"},
		{map[string]bool{"patch": true, "tokens": true}, PatchOptions{Kind: "z"}, "-patch needs the corrupted input once"},
		{with("corrupt-text"), PatchOptions{Kind: "z", CorruptTokens: "1", CorruptText: "a"}, "-patch needs the corrupted input once"},
		{with("metric", "answer"), PatchOptions{Kind: "z", CorruptTokens: "1", Metric: "loss", Answer: "a"}, "-metric loss reads neither"},
		{with("answer"), PatchOptions{Kind: "z", CorruptTokens: "1", Answer: "a"}, "-metric logit-diff needs both tokens"},
		{clean, PatchOptions{Kind: "z", CorruptTokens: "1"}, ""},
		{with("answer", "wrong"), PatchOptions{Kind: "pattern-by-pos", CorruptTokens: "1", Answer: "a", Wrong: "b"}, ""},
	} {
		err := CheckPatchFlags(c.given, c.o)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.o, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%+v: %v, want one line with %q", c.o, err, c.want)
		}
	}
}
