package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/internal/tooltest"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
)

// TestTextModelTokens: on a character-level text model -tokens reads each
// character exactly as typed (case kept; a digit, a comma and \n are
// characters; #N is an id) and -text reads text through the model's
// characters, the two giving the same output; a character the model lacks
// is one line naming it (and, for -text, the vocabulary's size), the
// -tokens error listing the characters in their own case.
func TestTextModelTokens(t *testing.T) {
	plainEnv(t, "100")
	ck, _, vocab := textCheckpoint(t, "kisIKaA 3,\n")
	tokens := func(args ...string) []string {
		return decode(t, runOK(t, append([]string{"-checkpoint", ck, "-json"}, args...)...)).Labels
	}
	for _, c := range []struct {
		tokens string
		want   []string
	}{
		{"k i s I K a A", []string{"k", "i", "s", "I", "K", "a", "A"}},
		{`3 , \n ␣ a`, []string{"3", ",", "\n", "␣", "a"}},
		{"#0 a", []string{vocab[0], "a"}},
	} {
		if got := tokens("-tokens", c.tokens); !slices.Equal(got, c.want) {
			t.Errorf("-tokens %q shows %q, want %q", c.tokens, got, c.want)
		}
	}
	byText := runOK(t, "-checkpoint", ck, "-json", "-text", "kisIK 3,")
	if byTokens := runOK(t, "-checkpoint", ck, "-json", "-tokens", "k i s I K ␣ 3 ,"); !bytes.Equal(byText, byTokens) {
		t.Error("-text and the same characters by -tokens give different output")
	}
	refused(t, "-text with a foreign character", []string{"-checkpoint", ck, "-text", "kiQ"},
		`-text: character "Q" at byte 2 is not in the model's vocabulary of `+strconv.Itoa(len(vocab))+" characters")
	refused(t, "-tokens with a foreign character", []string{"-checkpoint", ck, "-tokens", "k Q"},
		`-tokens: "Q" (token 1) is not a character of the model's`, " A I K ", "a i k s")
}

// TestTextPageInBrowser: the -html page of a text model of 64 positions,
// as a browser draws it: on the large heatmap no two position numbers, key
// labels or query labels overlap, and some numbers are left out; the
// training charts of its run show the held-out bits per character and not
// the exact match, and the token accuracy at each of train.eval_lengths;
// the ablation table (-ablate) gives token accuracy's change, not exact
// match's.
func TestTextPageInBrowser(t *testing.T) {
	chromium := tooltest.Chromium(t)
	ck, text, vocab := textCheckpoint(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n")
	if len(vocab) != 64 {
		t.Fatalf("the test's text has %d characters, want 64", len(vocab))
	}
	cfg, _, err := checkpoint.Peek(ck)
	if err != nil {
		t.Fatal(err)
	}
	config, err := cfg.YAML()
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Dir(ck) // the checkpoint's run: its config and metrics beside it
	for name, content := range map[string]string{
		rundir.ConfigFile: string(config),
		runlog.MetricsFile: `{"step":10,"loss":3,"lr":0.1}
{"step":10,"eval_loss":2.5,"token_acc":0.3,"seq_acc":0}
{"step":10,"eval_length":32,"eval_loss":2.6,"token_acc":0.25,"seq_acc":0}
{"step":20,"eval_loss":2,"token_acc":0.4,"seq_acc":0}
{"step":20,"eval_length":32,"eval_loss":2.1,"token_acc":0.35,"seq_acc":0}
`} {
		if err := os.WriteFile(filepath.Join(run, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "page.html")
	runNoted(t, "-checkpoint", run, "-data", text, "-ablate", "-html", path)
	bctx, _ := openPage(t, chromium, path)
	var axes struct {
		Overlaps map[string]int
		Numbers  int
	}
	var legends, ablation []string
	if err := chromedp.Run(bctx,
		chromedp.Evaluate(`(() => {
			const all = (sel, f) => Array.from(document.querySelectorAll(sel)).filter(f || (() => true)).map((e) => e.getBoundingClientRect());
			const overlaps = (bs) => bs.filter((a, i) => bs.some((b, j) => j > i &&
				a.right > b.left + 0.5 && b.right > a.left + 0.5 && a.bottom > b.top + 0.5 && b.bottom > a.top + 0.5)).length;
			const number = (anchor) => (e) => /^[0-9]+$/.test(e.textContent) && e.getAttribute("text-anchor") === anchor;
			const keyNumbers = all("#large text.axis-title", number("middle")), rowNumbers = all("#large text.axis-title", number("end"));
			return {Overlaps: {"key numbers": overlaps(keyNumbers), "row numbers": overlaps(rowNumbers),
				"key labels": overlaps(all('#large text[data-axis="key"]')), "query labels": overlaps(all('#large text[data-axis="query"]'))},
				Numbers: keyNumbers.length};
		})()`, &axes),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#loss-chart text.legend, #acc-chart text.legend")).map((e) => e.textContent)`, &legends),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#ablation th")).map((e) => e.textContent)`, &ablation),
	); err != nil {
		t.Fatal(err)
	}
	for what, n := range axes.Overlaps {
		if n > 0 {
			t.Errorf("%d of the heatmap's %s overlap the next", n, what)
		}
	}
	if axes.Numbers == 0 || axes.Numbers >= 64 {
		t.Errorf("%d position numbers on the key axis of 64 cells of 10 pixels, want some left out", axes.Numbers)
	}
	for _, want := range []string{"held-out bits/char", "token accuracy", "length 32 token accuracy"} {
		if !slices.Contains(legends, want) {
			t.Errorf("the training charts' legends %q lack %q", legends, want)
		}
	}
	if slices.Contains(legends, "exact match") {
		t.Errorf("a text model's training chart draws exact match: %q", legends)
	}
	if !slices.Equal(ablation, []string{"layer", "head", "role", "loss", "Δloss", "Δtoken accuracy"}) {
		t.Errorf("a text model's ablation table has the columns %q, want token accuracy's change and no exact match", ablation)
	}
}
