package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/tokenizer"
)

// TestParsePick: lists and ranges read in order, repeats once, and print
// back as the shortest ranges; all and -1 pick every one; what is not a
// list is refused in one line saying what is wrong and what is allowed.
func TestParsePick(t *testing.T) {
	for v, want := range map[string][]int{"3": {3}, "0,5-7": {0, 5, 6, 7}, "7-5,1": nil, "2,1,2": {1, 2}, "4-4": {4}} {
		p, err := ParsePick(v)
		if want == nil {
			if err == nil || !strings.HasPrefix(err.Error(), `the range 7-5 runs backwards; want all`) {
				t.Errorf("%q: %v, want the range refused", v, err)
			}
			continue
		}
		if err != nil || !slices.Equal(p.Only, want) || p.All {
			t.Errorf("%q: %+v, %v; want %v", v, p, err, want)
		}
	}
	if p, _ := ParsePick("0,5-7,9,10"); p.String() != "0,5-7,9-10" {
		t.Errorf("0,5-7,9,10 prints as %q", p.String())
	}
	for _, v := range []string{"all", "-1"} {
		if p, err := ParsePick(v); err != nil || !p.All || !slices.Equal(p.of(3), []int{0, 1, 2}) {
			t.Errorf("%q: %+v, %v; want every head", v, p, err)
		}
	}
	for _, v := range []string{"", "1,", "a-b", "1-", "-2", "1.5", "5000"} {
		if _, err := ParsePick(v); err == nil || !strings.HasSuffix(err.Error(), "; want all, a number or a list of numbers and ranges, e.g. 0,5-7") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line saying what is wrong and what is allowed", v, err)
		}
	}
}

// llama8B is Llama 3.1 8B's shape (the bench case): 32 layers x 32
// heads, 8 key-value heads, d_model 4096, SwiGLU of 14336, vocabulary
// 128256.
var llama8B = model.Config{Vocab: 128256, Context: 8192, DModel: 4096, Heads: 32, KVHeads: 8, Layers: 32, MLP: true, DFF: 14336, Activation: model.ActivationSwiGLU}

// TestPerHeadWorkRefusedUpFront: -ablate on every head of an 8B-shaped
// model trained elsewhere (1,025 forwards of one 101-token sequence) is
// estimated at hours and refused in one line naming the flag, the
// estimate, the limit and how to pick fewer heads; -ablate and -circuits
// on 4 heads picked are allowed. ForwardFLOPs agrees with 2 FLOP per weight a token (within 5%
// at 101 tokens, where attention is small).
func TestPerHeadWorkRefusedUpFront(t *testing.T) {
	task := data.NewRepeatedTokens(tokenizer.IDs(llama8B.Vocab), llama8B.Vocab, 51, nil)
	r := &Report{Options: Options{Samples: DefaultPretrainedSamples, Ablate: true}, Config: llama8B, Task: task}
	err := r.checkPerHeadTime(Subject{}, 0)
	if err == nil || strings.Contains(err.Error(), "\n") {
		t.Fatalf("every head of an 8B model: %v, want a one-line refusal", err)
	}
	for _, want := range []string{"-ablate: the work on 1024 heads (1025 forwards", "hours at a modelled 100 GFLOP/s; allowed: up to 1 hour; pick fewer heads with -layer and -head"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err, want)
		}
	}
	r.Options.Layers, r.Options.Heads, r.Options.Circuits = Only(0, 31), Only(0, 1), true
	if err := r.checkPerHeadTime(Subject{}, 0); err != nil {
		t.Errorf("-ablate -circuits on 4 heads: %v", err)
	}
	// Patching 4 heads of 101 positions alone would be 404 forwards of
	// 12 TFLOP: past MaxPatchedFLOPs, they are patched whole.
	if w := analysis.PatchWork(llama8B, 4, 8, 101); w.Forwards != 5 || w.Tokens != 8*101 {
		t.Errorf("patching 4 heads of an 8B model: %+v, want 5 forwards of 808 tokens", w)
	}
	weights := float64(llama8B.Layers)*float64(4096*(4096+2*1024)+4096*4096+3*4096*14336) + 4096*128256
	if got := analysis.ForwardFLOPs(llama8B, 101, 101); got < 2*weights*101 || got > 1.05*2*weights*101 {
		t.Errorf("ForwardFLOPs of 101 tokens = %.4g, want 2 x %.4g weights x 101 within 5%%", got, weights)
	}
}
