package report

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
	"github.com/attnscope/attnscope/render/htmlview"
	"github.com/attnscope/attnscope/tokenizer"
)

// encode is d as the -json output decodes, a map.
func encode(t *testing.T, d Document) map[string]any {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestJSONSelection: -layer 1 -head 3 on the committed induction run
// writes that head alone in every per-head field, each value the one the
// whole document holds for layer 1 head 3, and says which (selection);
// without -layer and -head every head is there. A Llama's kv_head holds
// the selected head's key-value head. The per-head work (ablation, patching,
// copying, composition) runs on the head picked alone.
func TestJSONSelection(t *testing.T) {
	o := Options{Checkpoint: "../testdata/induction", Layers: Only(1), Heads: Only(3), Samples: 8, Seed: 1, Circuits: true, Ablate: true}
	r, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	one := r.JSON()
	r.Options.Layers, r.Options.Heads = Pick{}, Pick{}
	all := r.JSON()
	if fmt.Sprint(one.Selection) != "{[1] [3]}" || fmt.Sprint(all.Selection) != "{[0 1] [0 1 2 3]}" {
		t.Fatalf("selections %v and %v", one.Selection, all.Selection)
	}
	same := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	att := all.Attention.([][][][]float32)
	same("attention", one.Attention, [][][][]float32{{att[1][3]}})
	c, ca := one.Circuits, all.Circuits
	same("prefix_matching", c.PrefixMatching, [][]float64{{ca.PrefixMatching[1][3]}})
	same("direct_logit.heads", c.DirectLogit.Heads, [][]float64{{ca.DirectLogit.Heads[1][3]}})
	same("direct_logit.top_tokens", c.DirectLogit.TopTokens, [][][]int{{ca.DirectLogit.TopTokens[1][3]}})
	same("patching.restored", c.Patching.Restored, [][]float64{{ca.Patching.Restored[1][3]}})
	same("patching.by_position", c.Patching.ByPosition, [][][]float64{{ca.Patching.ByPosition[1][3]}})
	// Copying and composition ran on the head picked alone: its copying
	// record, and no composition (layer 0 is not picked).
	if len(c.Copying) != 1 || c.Copying[0].Layer != 1 || c.Copying[0].Head != 3 || len(ca.Copying) != 1 {
		t.Errorf("copying %+v of %d, want layer 1 head 3 alone", c.Copying, len(ca.Copying))
	}
	if len(c.Composition) != 0 || len(ca.Composition) != 0 {
		t.Errorf("%d compositions of %d, want none", len(c.Composition), len(ca.Composition))
	}
	// The per-head work ran on the head picked alone.
	if rows := one.Ablation.Rows; len(rows) != 1 || rows[0].Layer != 1 || rows[0].Head != 3 || len(all.Ablation.Rows) != 1 {
		t.Errorf("ablation rows %+v of %d, want layer 1 head 3 alone", rows, len(all.Ablation.Rows))
	}
	same("patching.heads", ca.Patching.Heads, ablation.Heads{{1, 3}})
	same("heads", one.Heads[0], all.Heads[1][3:4])
	if one.Task != "induction" || one.Texts != nil || one.Bytes != nil {
		t.Errorf("task %q, texts %q, bytes %v; want induction and no texts", one.Task, one.Texts, one.Bytes)
	}

	// A Llama's query heads share key-value heads: kv_head is the selected
	// head's.
	r, err = build(Options{Checkpoint: "../open/hf/testdata/llama", Tokens: "1 2 3", Layers: Only(1), Heads: Only(3), Samples: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	one = r.JSON()
	r.Options.Layers, r.Options.Heads = Every, Every
	all = r.JSON()
	if len(all.KVHead) != 4 || !reflect.DeepEqual(one.KVHead, all.KVHead[3:]) {
		t.Errorf("kv_head %v of %v", one.KVHead, all.KVHead)
	}
}

// TestJSONTextsAndTask: text given to a model trained elsewhere is what
// ran (task "text given", one sample), each token's raw text beside its
// label; a token whose bytes are not valid UTF-8 has them in bytes.
func TestJSONTextsAndTask(t *testing.T) {
	dna := opentest.TinyGPT2Dir(t, 4, opentest.DNAFiles)
	r, err := build(Options{Checkpoint: dna, Text: "gattaca", Samples: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := r.JSON()
	if d.Task != TextGiven || d.Samples != 1 || strings.Join(d.Texts, "") != "gattaca" || d.Bytes != nil {
		t.Errorf("task %q, samples %d, texts %q, bytes %v", d.Task, d.Samples, d.Texts, d.Bytes)
	}
	r, err = build(Options{Checkpoint: dna, Samples: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if d := r.JSON(); d.Task != "repeated-tokens" || d.Samples != 4 {
		t.Errorf("without -text: task %q, samples %d", d.Task, d.Samples)
	}

	gpt2, bad := tokenizer.GPT2(), invalidGPT2Token(t)
	dir := opentest.GPT2Dir(t, model.Config{Context: 8, DModel: 8, Heads: 2, Layers: 1, DFF: 8})
	r, err = build(Options{Checkpoint: dir, Tokens: fmt.Sprintf("464 %d 3797", bad), Samples: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	d = r.JSON()
	raw := gpt2.Token(bad)
	want := make([]int, len(raw))
	for i, c := range raw {
		want[i] = int(c)
	}
	if d.Task != TokensGiven || fmt.Sprint(d.Texts) != fmt.Sprint([]string{"The", strings.ToValidUTF8(string(raw), "\uFFFD"), " cat"}) ||
		!reflect.DeepEqual(d.Bytes, [][]int{nil, want, nil}) {
		t.Errorf("task %q, texts %q, bytes %v", d.Task, d.Texts, d.Bytes)
	}
	if d.Cut == nil || *d.Cut != (htmlview.LogitsCut{TopK: LogitsTopK, Vocab: gpt2.Size(), Positions: 3, Limit: MaxLogitValues}) {
		t.Errorf("logits_cut %+v", d.Cut)
	}
}

// invalidGPT2Token is the first id of GPT-2's tokenizer whose bytes are
// not valid UTF-8 (part of a character).
func invalidGPT2Token(t *testing.T) int {
	t.Helper()
	gpt2 := tokenizer.GPT2()
	for id := range gpt2.Size() {
		if !utf8.Valid(gpt2.Token(id)) {
			return id
		}
	}
	t.Fatal("every GPT-2 token is valid UTF-8")
	return -1
}

// docPath is one key's row in docs/json.md's key-by-key section: a path
// such as `circuits.copying[].layer` in the first cell.
var docPath = regexp.MustCompile("^\\| `([a-z0-9_.\\[\\]]+)` \\|")

// documentedKeys are the paths docs/json.md's section on inspect -json
// lists.
func documentedKeys(t *testing.T) map[string]bool {
	t.Helper()
	src, err := os.ReadFile("../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(src), "\n## `inspect -json`, key by key\n")
	if !ok {
		t.Fatal("docs/json.md has no section \"`inspect -json`, key by key\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	keys := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if m := docPath.FindStringSubmatch(line); m != nil {
			keys[m[1]] = true
		}
	}
	return keys
}

// structKeys adds the key paths of values of type t under path: every
// JSON field of a struct (embedded structs inlined), through pointers and
// slices ("[]"). A type with its own MarshalJSON is a leaf here (its keys
// come from real output).
func structKeys(t reflect.Type, path string, keys map[string]bool) {
	if t.Implements(reflect.TypeFor[json.Marshaler]()) {
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		structKeys(t.Elem(), path, keys)
	case reflect.Slice:
		structKeys(t.Elem(), path+"[]", keys)
	case reflect.Struct:
		for _, f := range reflect.VisibleFields(t) {
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || f.Anonymous || tag == "-" {
				continue
			}
			name := tag
			if name == "" {
				name = f.Name
			}
			if path != "" {
				name = path + "." + name
			}
			keys[name] = true
			structKeys(f.Type, name, keys)
		}
	}
}

// outputKeys adds the key paths of a decoded JSON value.
func outputKeys(v any, path string, keys map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			name := k
			if path != "" {
				name = path + "." + k
			}
			keys[name] = true
			outputKeys(child, name, keys)
		}
	case []any:
		for _, child := range x {
			outputKeys(child, path+"[]", keys)
		}
	}
}

// TestJSONDocumented: docs/json.md lists every key of the -json document,
// at every depth, and no other: the keys of the structs (Document and
// what it holds) and of real outputs (the induction run with -circuits and
// -ablate, and with -patch; GPT-2's vocabulary, whose logits are cut, on tokens one of
// which is not valid UTF-8; a Llama, whose query heads share key-value
// heads).
func TestJSONDocumented(t *testing.T) {
	keys := map[string]bool{}
	structKeys(reflect.TypeFor[Document](), "", keys)
	gpt2 := opentest.GPT2Dir(t, model.Config{Context: 8, DModel: 8, Heads: 2, Layers: 1, DFF: 8})
	for _, o := range []Options{
		{Checkpoint: "../testdata/induction", Circuits: true, Ablate: true},
		{Checkpoint: gpt2, Tokens: fmt.Sprintf("464 %d 3797", invalidGPT2Token(t))},
		{Checkpoint: "../open/hf/testdata/llama", Tokens: "1 2 3"},
		{Checkpoint: "../testdata/induction", Tokens: "3 7 1 9 3 7 1", Patch: PatchOptions{Kind: "z-by-pos", CorruptTokens: "11 12 13 14 3 7 1", Answer: "9", Wrong: "14"}},
	} {
		o.Samples, o.Seed = 4, 1
		r, err := build(o)
		if err != nil {
			t.Fatal(err)
		}
		outputKeys(encode(t, r.JSON()), "", keys)
	}
	documented := documentedKeys(t)
	for k := range keys {
		if !documented[k] {
			t.Errorf("key %s is not in docs/json.md", k)
		}
	}
	var stale []string
	for k := range documented {
		if !keys[k] {
			stale = append(stale, k)
		}
	}
	slices.Sort(stale)
	if len(stale) > 0 {
		t.Errorf("docs/json.md lists keys the document does not have: %v", stale)
	}
}
