package rundir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/msg/msgtest"
	"github.com/attnscope/attnscope/model"
)

// TestConfigsLoad loads every example in configs/ and checks it survives the
// YAML round trip.
func TestConfigsLoad(t *testing.T) {
	paths, err := filepath.Glob("../configs/*.yaml")
	if err != nil || len(paths) < 4 {
		t.Fatalf("found %d configs (%v), want at least 4", len(paths), err)
	}
	for _, path := range paths {
		var sets []string
		var open OpenPretrained
		switch filepath.Base(path) {
		case "text.yaml":
			sets = []string{"task.path=" + goSourceText(t)}
		case "finetune.yaml":
			// The directory it names is the user's: a stand-in of a GPT-2's shape.
			sets = []string{"task.path=" + goSourceText(t)}
			open = func(string) (Pretrained, error) {
				pre := stubPretrained()
				pre.Model.Vocab, pre.Model.Context, pre.Record.Vocab, pre.Record.Context = 50257, 1024, 50257, 1024
				return pre, nil
			}
		}
		cfg, err := LoadConfigFrom(path, sets, open)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		roundTrip(t, path, cfg)
	}
}

// goSourceText writes what configs/text.yaml's comment makes (the strings
// package's source, concatenated) to a temporary file and returns its path.
func goSourceText(t *testing.T) string {
	t.Helper()
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	root := strings.TrimSpace(string(goroot))
	files, err := filepath.Glob(filepath.Join(root, "src", "strings", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go source under GOROOT %s: %v", root, err)
	}
	var text []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text = append(text, b...)
	}
	path := filepath.Join(t.TempDir(), "strings.go.txt")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func roundTrip(t *testing.T, name string, cfg Config) {
	t.Helper()
	src, err := cfg.YAML()
	if err != nil {
		t.Fatalf("%s: YAML: %v", name, err)
	}
	back, err := ParseRunConfig(name+" (rendered)", src, nil)
	if err != nil {
		t.Fatalf("%s: re-parsing the rendered config: %v\n%s", name, err, src)
	}
	if !reflect.DeepEqual(back, cfg) {
		t.Fatalf("%s: round trip changed the config:\n got %+v\nwant %+v", name, back, cfg)
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	if _, err := LoadConfig(path, nil); !os.IsNotExist(errors.Cause(err)) {
		t.Fatalf("LoadConfig(missing) = %v, want a not-exist error", err)
	}
}

// TestLoadConfigSizeLimit: a config file is read up to MaxConfigBytes, so a
// wrong path (/dev/zero, a huge file, a directory) is refused on one line
// instead of read whole or forever.
func TestLoadConfigSizeLimit(t *testing.T) {
	dir := t.TempDir()
	fits := filepath.Join(dir, "fits.yaml")
	body := "seed: 3\n"
	padding := strings.Repeat("#"+strings.Repeat(" ", 62)+"\n", (MaxConfigBytes-len(body))/64)
	padding += strings.Repeat("#", MaxConfigBytes-len(body)-len(padding))
	if err := os.WriteFile(fits, []byte(padding+"\n"+body[:len(body)-1]), 0o644); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(fits); err != nil || info.Size() != MaxConfigBytes {
		t.Fatalf("test file: %v, %v", info, err)
	}
	if cfg, err := LoadConfig(fits, nil); err != nil || cfg.Seed != 3 {
		t.Errorf("a config of exactly MaxConfigBytes: seed %d, %v", cfg.Seed, err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(padding+"\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, path, want string }{
		{"one byte too many", big, "reading config: " + big + " is 1048577 bytes, more than the 1048576 bytes a config may take"},
		{"a directory", dir, "reading config: " + dir + ": is a directory, not a regular file"},
		{"/dev/zero", "/dev/zero", "reading config: /dev/zero: is a character device, not a regular file"},
	}
	for _, c := range cases {
		if _, err := os.Stat(c.path); err != nil {
			t.Logf("%s: skipped (%v)", c.name, err)
			continue
		}
		_, err := LoadConfig(c.path, nil)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: error %v\nwant %s", c.name, err, c.want)
		}
	}
}

func TestParseConfigErrors(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // fragments the one-line message must contain
	}{
		{"empty", "", []string{"x.yaml: empty config"}},
		{"comments only", "# nothing here\n\n", []string{"x.yaml: empty config"}},
		{"bare document marker", "---\n", []string{"x.yaml: empty config"}},
		{"syntax line 1", "a: b: c\n", []string{"x.yaml:1:5: YAML syntax: mapping values are not allowed"}},
		{"syntax later line", "seed: 1\ntask:\n  name: [copy\n", []string{"x.yaml:3:10: YAML syntax: did not find expected ',' or ']'"}},
		{"parser error on line 4", "seed: 1\nmodel:\n  heads: 4\n layers: 2\n", []string{"x.yaml:4:2: YAML syntax: did not find expected key"}},
		{"unterminated string (reported where it opens)", "seed: 1\ntask:\n  name: 'copy\n", []string{"x.yaml:3:9: YAML syntax: found unexpected end of stream"}},
		{"tab indentation", "seed: 1\n\tmodel: 1\n", []string{"x.yaml:2:1: YAML syntax:", "tab"}},
		{"two documents", "seed: 1\n---\nseed: 2\n", []string{"x.yaml:2:1: YAML syntax: a second YAML document"}},
		{"top level list", "- seed\n", []string{"x.yaml:1:1: the config: want a mapping with keys seed, init_from, task, model, train, init, got a list"}},
		{"top level scalar", "hello\n", []string{"x.yaml:1:1: the config: want a mapping", "got a value"}},
		{"unknown top key", "sed: 1\n", []string{"x.yaml:1:1: unknown key sed (allowed: seed, init_from, task, model, train)"}},
		{"unknown train key", "train:\n  lr_rate: 0.1\n", []string{"x.yaml:2:3: unknown key train.lr_rate (allowed: batch_size, steps, lr, schedule, warmup_steps, min_lr, grad_clip, weight_decay, beta1, beta2, eps, log_every, eval_every, eval_size, checkpoint_every, eval_lengths, eval_generate, probes, moments)"}},
		{"unknown model key", "model:\n  n_heads: 4\n", []string{"unknown key model.n_heads (allowed: d_model, heads, layers, mlp, d_ff, qkv_bias, out_bias, lm_head_bias, dropout, attention, position, rope_base, kv_heads, window, kv_latent, norm, norm_bias, norm_eps, activation, mlp_bias, tie_embeddings, qk_norm, norm_placement, norm_offset, qk_norm_scope, parallel_residual, head_dim, rope_scaling, rope_factor, rope_low_freq_factor, rope_high_freq_factor, rope_original_context, rotary_dims, global_layers, local_rope_base, attn_scale, attn_softcap, final_softcap, embed_scale)"}},
		{"vocab is derived", "model:\n  vocab: 10\n", []string{"x.yaml:2:3: model.vocab cannot be set: it comes from the task"}},
		{"context is derived", "model:\n  context: 10\n", []string{"model.context cannot be set: it is the task's sequence length"}},
		{"duplicate key", "seed: 1\nmodel:\n  heads: 4\n  heads: 8\n", []string{"x.yaml:4:3: duplicate key model.heads (first set at line 3)"}},
		{"word for integer", "model:\n  d_model: 32\n  heads: four\n", []string{`x.yaml:3:10: model.heads = "four": want an integer`}},
		{"fraction for integer", "train:\n  steps: 2.5\n", []string{"x.yaml:2:10: train.steps = 2.5: want an integer"}},
		{"list for integer", "model:\n  heads: [4]\n", []string{"x.yaml:2:10: model.heads: want an integer, got a list"}},
		{"mapping for number", "train:\n  lr: {peak: 1}\n", []string{"x.yaml:2:7: train.lr: want a number, got a mapping"}},
		{"no value", "model:\n  heads:\n", []string{"model.heads: want an integer, got no value"}},
		{"word for number", "train:\n  lr: fast\n", []string{`train.lr = "fast": want a number`}},
		{"yes for bool", "model:\n  mlp: yes\n", []string{`x.yaml:2:8: model.mlp = "yes": want true or false`}},
		{"number for bool", "model:\n  mlp: 1\n", []string{"model.mlp = 1: want true or false"}},
		{"negative seed", "seed: -1\n", []string{"x.yaml:1:7: seed = -1: want an integer >= 0"}},
		{"scalar for section", "model: 4\n", []string{"x.yaml:1:8: model: want a mapping with keys d_model, heads", "got a value"}},
		{"list key", "? [a]\n: 1\n", []string{"a key must be a plain name, got a list"}},
		{"alias to a mapping", "task: &t {name: copy}\nseed: *t\n", []string{"seed: want an integer >= 0, got a mapping"}},
		{"unknown task", "task:\n  name: copyy\n", []string{`x.yaml: task.name = "copyy": unknown task (want one of: copy, induction, repeat, reverse, sort, text)`}},
		{"zero length", "task:\n  length: 0\n", []string{"task.length = 0: must be in [1, 512]"}},
		{"one symbol", "task:\n  symbols: 1\n", []string{"task.symbols = 1: must be in [2, 65536]"}},
		{"not divisible", "model:\n  d_model: 30\n", []string{"x.yaml: model.d_model = 30 is not divisible by model.heads = 4"}},
		{"zero heads", "model:\n  heads: 0\n", []string{"model.heads = 0: must be positive"}},
		{"negative width", "model:\n  d_model: -32\n", []string{"model.d_model = -32: must be positive"}},
		{"zero layers", "model:\n  layers: 0\n", []string{"model.layers = 0: must be positive"}},
		{"negative d_ff", "model:\n  mlp: true\n  d_ff: -4\n", []string{"model.d_ff = -4: must be positive when model.mlp is true"}},
		{"dropout 1", "model:\n  dropout: 1\n", []string{"model.dropout = 1: must be in [0, 1)"}},
		{"negative dropout", "model:\n  dropout: -0.1\n", []string{"model.dropout = -0.1: must be in [0, 1)"}},
		{"NaN dropout", "model:\n  dropout: .nan\n", []string{"model.dropout = NaN: must be a finite number"}},
		{"unknown attention path", "model:\n  attention: native\n", []string{`model.attention = "native": want fused or gorgonia`}},
		{"zero batch", "train:\n  batch_size: 0\n", []string{"train.batch_size = 0: must be positive"}},
		{"unknown probes", "train:\n  probes: maybe\n", []string{`train.probes = "maybe": must be "on" or "off"`}},
		{"unknown moments", "train:\n  moments: bf16\n", []string{`train.moments = "bf16": must be "float32" or "float64" (default: float64, float32 with init_from)`}},
		{"negative steps", "train:\n  steps: -5\n", []string{"train.steps = -5: must be positive"}},
		{"zero lr", "train:\n  lr: 0\n", []string{"train.lr = 0: must be positive"}},
		{"negative lr", "train:\n  lr: -1e-3\n", []string{"train.lr = -0.001: must be positive"}},
		{"infinite lr", "train:\n  lr: .inf\n", []string{"train.lr = +Inf: must be a finite number"}},
		{"unknown schedule", "train:\n  schedule: linear\n", []string{`train.schedule = "linear": unknown schedule (want one of: constant, cosine)`}},
		{"warmup past the end", "train:\n  steps: 10\n  warmup_steps: 11\n", []string{"train.warmup_steps = 11: must not exceed train.steps = 10"}},
		{"negative warmup", "train:\n  warmup_steps: -1\n", []string{"train.warmup_steps = -1: must be 0 or more"}},
		{"min_lr above lr", "train:\n  lr: 1e-3\n  min_lr: 1e-2\n", []string{"train.min_lr = 0.01: must be in [0, train.lr = 0.001]"}},
		{"negative clip", "train:\n  grad_clip: -1\n", []string{"train.grad_clip = -1: must be 0 (off) or positive"}},
		{"negative decay", "train:\n  weight_decay: -0.1\n", []string{"train.weight_decay = -0.1: must be 0 (off) or positive"}},
		{"beta1 of 1", "train:\n  beta1: 1\n", []string{"train.beta1 = 1: must be in [0, 1)"}},
		{"negative beta2", "train:\n  beta2: -0.5\n", []string{"train.beta2 = -0.5: must be in [0, 1)"}},
		{"zero eps", "train:\n  eps: 0\n", []string{"train.eps = 0: must be positive"}},
		{"negative log_every", "train:\n  log_every: -1\n", []string{"train.log_every = -1: must be 0 or more"}},
		{"negative eval_every", "train:\n  eval_every: -1\n", []string{"train.eval_every = -1: must be 0 or more"}},
		{"negative checkpoint_every", "train:\n  checkpoint_every: -1\n", []string{"train.checkpoint_every = -1: must be 0 or more"}},
		{"eval without a set", "train:\n  eval_size: 0\n", []string{"train.eval_size = 0: must be positive when train.eval_every = 100"}},
		{"huge context", "task:\n  name: copy\n  length: 512\ntrain:\n  batch_size: 128\n", []string{"x.yaml: the run (a training graph of 128 x 1024 positions, an evaluation graph of 8 rows and a held-out set of 1000 rows taking 23.4 MiB) needs an estimated 8.8 GiB (limit 8.0 GiB)"}},
		{"huge batch", "train:\n  batch_size: 10000000\n", []string{"needs an estimated", "reduce train.batch_size"}},
		{"absurd layer count", "model:\n  layers: 1000000000000\n", []string{"needs an estimated"}},
		{"absurd width", "model:\n  d_model: 4000000000000\n", []string{"needs an estimated"}},
	}
	for _, c := range cases {
		_, err := ParseConfig("x.yaml", []byte(c.src), nil)
		msgtest.Refusal(t, c.name, err, c.want...)
	}
}

// TestSyntaxErrorPositions pins file:line:column for the mistakes people
// make in a config. The column points at the culprit: the tab, the stray
// bracket, the second ':', the key indented wrongly, the quote never closed,
// the list item in a mapping, or, for a missing ']', '}' or ',', the last
// value before it (where yaml.v3 saw the problem is often lines later, and
// its own line is sometimes where the brace opened).
func TestSyntaxErrorPositions(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"missing '}' before more keys", "seed: 1\ntask: {name: copy, length: 8\nmodel:\n  heads: 4\n",
			"x.yaml:2:28: YAML syntax: did not find expected ',' or '}'"},
		{"missing '}' at the end", "seed: 1\ntask: {name: copy, length: 8\n", "x.yaml:2:28: YAML syntax: did not find expected ',' or '}'"},
		{"missing ']' before more keys", "seed: 1\nx: [1, 2\nmodel:\n  heads: 4\n", "x.yaml:2:8: YAML syntax: did not find expected ',' or ']'"},
		{"missing ']' inside a section", "model:\n  d_model: 64\n  heads: [4, 8\n  layers: 2\n", "x.yaml:3:14: YAML syntax: did not find expected ',' or ']'"},
		{"missing ',' in a flow mapping", "model: {d_model: 64, heads: 4}\ntrain: {lr: 3e-3 steps: 10}\n", "x.yaml:2:13: YAML syntax: did not find expected ',' or '}'"},
		{"missing ',' on line 1", "task: {name: copy length: 8}\n", "x.yaml:1:25: YAML syntax: did not find expected ',' or '}'"},
		{"tab indenting a key", "seed: 1\nmodel:\n\theads: 4\n", "x.yaml:3:1: YAML syntax: found character that cannot start any token"},
		{"tab before a top-level key", "seed: 1\n\tmodel: 1\n", "x.yaml:2:1: YAML syntax: found a tab character that violates indentation"},
		{"key indented too little", "model:\n  d_model: 64\n heads: 4\n", "x.yaml:3:2: YAML syntax: did not find expected key"},
		{"key indented too much", "model:\n  heads: 4\n    layers: 2\n", "x.yaml:3:11: YAML syntax: mapping values are not allowed in this context"},
		{"unclosed single quote", "seed: 1\ntask:\n  name: 'copy\nmodel:\n  heads: 4\n", "x.yaml:3:9: YAML syntax: found unexpected end of stream"},
		{"unclosed double quote", "model:\n  d_model: 64\n  heads: \"4\n  layers: 2\n", "x.yaml:3:10: YAML syntax: found unexpected end of stream"},
		{"unclosed quote further down", "seed: 1\n\nmodel:\n  heads: 4\n  layers: 2\n  mlp: true\n\n# the schedule\ntrain:\n  lr: 1e-3\n  schedule: 'cosine\n  steps: 100\n",
			"x.yaml:11:13: YAML syntax: found unexpected end of stream"},
		{"key: value: value", "seed: 1\ntask:\n  name: copy: sort\n", "x.yaml:3:13: YAML syntax: mapping values are not allowed in this context"},
		{"two keys on one line", "train:\n  lr: 3e-3\n  beta2: 0.999, eps: 1e-8\n", "x.yaml:3:20: YAML syntax: mapping values are not allowed in this context"},
		{"stray ']' as a value", "seed: 1\nmodel:\n  heads: ]\n", "x.yaml:3:10: YAML syntax: did not find expected node content"},
		{"stray '}' after a flow mapping", "seed: 1\nmodel: {heads: 4}}\n", "x.yaml:2:18: YAML syntax: did not find expected key"},
		{"list item in a mapping", "model:\n  d_model: 64\n  - heads: 4\n", "x.yaml:3:3: YAML syntax: did not find expected key"},
		{"missing ':' (yaml.v3 sees the next line's)", "seed: 1\nmodel:\n  heads 4\n  layers: 2\n", "x.yaml:4:9: YAML syntax: mapping values are not allowed in this context"},
		{"undefined alias", "seed: 1\nmodel:\n  heads: *h\n", "x.yaml:3:11: YAML syntax: unknown anchor 'h' referenced"},
		{"control character", "seed: 1\nmodel:\n  heads: 4\x01\n", "x.yaml:3:11: YAML syntax: control characters are not allowed"},
		{"CR LF line ends", "seed: 1\r\nmodel:\r\n\theads: 4\r\n", "x.yaml:3:1: YAML syntax: found character that cannot start any token"},
		{"columns count characters", "# é\nmodel:\n  é: 1: 2\n", "x.yaml:3:7: YAML syntax: mapping values are not allowed in this context"},
		{"byte order mark not counted", "\uFEFFa: b: c\n", "x.yaml:1:5: YAML syntax: mapping values are not allowed in this context"},
		{"second document", "seed: 1\n---\nseed: 2\n", "x.yaml:2:1: YAML syntax: a second YAML document starts here; a config is one document"},
		// Not a syntax error: a plain scalar may hold ']'.
		{"stray ']' after a value", "seed: 1\nmodel:\n  heads: 4]\n", `x.yaml:3:10: model.heads = "4]": want an integer`},
	}
	for _, c := range cases {
		_, err := ParseConfig("x.yaml", []byte(c.src), nil)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: error %v\nwant %s", c.name, err, c.want)
		}
	}
}

// TestSyntaxErrorPositionInExample breaks configs/sort.yaml as a user editing
// it might and checks the position against the file's own lines: the
// column must land on the culprit text.
func TestSyntaxErrorPositionInExample(t *testing.T) {
	src, err := os.ReadFile("../configs/sort.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, old, new string
		culprit        string // the text the reported position must start
	}{
		{"unclosed quote", "  name: sort\n", "  name: 'sort\n", "'sort"},
		{"unclosed flow mapping", "task:\n  name: sort\n  length: 8\n  symbols: 16\n", "task: {name: sort, length: 8, symbols: 16\n", "16\n"},
		{"tab", "  heads: 4\n", "\theads: 4\n", "\theads"},
		{"indented too little", "  layers: 2\n", " layers: 2\n", "layers: 2"},
		{"key: value: value", "  lr: 3.0e-3\n", "  lr: 3.0e-3: x\n", ": x"},
		{"stray bracket", "  steps: 4000\n", "  steps: ]4000\n", "]4000"},
	}
	for _, c := range cases {
		broken := strings.Replace(string(src), c.old, c.new, 1)
		if broken == string(src) {
			t.Fatalf("%s: configs/sort.yaml has no %q", c.name, c.old)
		}
		_, err := ParseConfig("sort.yaml", []byte(broken), nil)
		var line, column int
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if _, scanErr := fmt.Sscanf(err.Error(), "sort.yaml:%d:%d: YAML syntax:", &line, &column); scanErr != nil {
			t.Errorf("%s: error %q has no line:column", c.name, err)
			continue
		}
		lines := strings.Split(broken, "\n")
		if line > len(lines) || column > len([]rune(lines[line-1]))+1 {
			t.Errorf("%s: %v points past the file", c.name, err)
			continue
		}
		at := string([]rune(lines[line-1])[column-1:]) + "\n"
		if !strings.HasPrefix(at, c.culprit) {
			t.Errorf("%s: %v points at %q, want %q", c.name, err, at, c.culprit)
		}
	}
}

// TestLocateGivesUpOnHugeInput: past locateBudget the error keeps yaml.v3's
// line and drops the column rather than parse for seconds.
func TestLocateGivesUpOnHugeInput(t *testing.T) {
	src := strings.Repeat("# padding padding padding padding padding padding padding\n", 20000) + "seed: 1\nmodel: a: b\n"
	_, err := ParseConfig("x.yaml", []byte(src), nil)
	want := "x.yaml:20002: YAML syntax: mapping values are not allowed in this context"
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant %s", err, want)
	}
}

func TestSetErrors(t *testing.T) {
	cases := []struct {
		set  string
		want []string
	}{
		{"model.heads", []string{"-set model.heads: want key=value"}},
		{"=3", []string{"-set =3: want key=value"}},
		{"train.lr_rate=1e-3", []string{"-set train.lr_rate=1e-3: unknown key train.lr_rate (allowed: batch_size, steps, lr,"}},
		{"modle.heads=8", []string{"-set modle.heads=8: unknown key modle (allowed: seed, init_from, task, model, train)"}},
		{"model.heads.x=1", []string{"-set model.heads.x=1: unknown key model.heads.x (model.heads is not a section)"}},
		{"model.vocab=3", []string{"-set model.vocab=3: model.vocab cannot be set"}},
		{"model.heads=four", []string{`-set model.heads=four: model.heads = "four": want an integer`}},
		{"model.heads=[8]", []string{"-set model.heads=[8]: model.heads: want an integer, got a list"}},
		{"model.heads=", []string{"-set model.heads=: model.heads: want an integer, got no value"}},
		{"train.lr=[", []string{"-set train.lr=[: YAML syntax:"}},
		{"model={heads: x}", []string{`-set model={heads: x}: model.heads = "x": want an integer`}},
		{"model={n_heads: 2}", []string{"-set model={n_heads: 2}: unknown key model.n_heads"}},
		{"task.name=copyy", []string{`-set task.name=copyy: task.name = "copyy": unknown task (want one of: copy, induction, repeat, reverse, sort, text); did you mean copy?`}},
		{"train.schedule=cos", []string{`-set train.schedule=cos: train.schedule = "cos": unknown schedule (want one of: constant, cosine); did you mean cosine?`}},
		{"model={heads: 0}", []string{"-set model={heads: 0}: model.heads = 0: must be positive"}},
		{"model.heads=7", []string{"x.yaml with -set model.heads=7: model.d_model = 32 is not divisible by model.heads = 7"}},
		{"train.schedule=cosin", []string{`train.schedule = "cosin": unknown schedule`}},
	}
	for _, c := range cases {
		_, err := ParseConfig("x.yaml", []byte("seed: 1\n"), []string{c.set})
		msgtest.Refusal(t, "-set "+c.set, err, c.want...)
	}
}

func TestSetOverrides(t *testing.T) {
	file := "seed: 1\nmodel:\n  heads: 2\n"
	cases := []struct {
		sets  []string
		check func(Config) bool
	}{
		{[]string{"model.heads=8"}, func(c Config) bool { return c.Model.Heads == 8 }},
		{nil, func(c Config) bool { return c.Model.Heads == 2 }},
		{[]string{"train.lr=1e-3"}, func(c Config) bool { return c.Train.LR == 1e-3 }},
		{[]string{"task.name=sort"}, func(c Config) bool { return c.Task.Name == "sort" && c.Model.Vocab == 17 }},
		{[]string{"task.name=repeat"}, func(c Config) bool { return c.Model.Vocab == 16 && c.Model.Context == 8 }},
		{[]string{"seed=3", "seed=4"}, func(c Config) bool { return c.Seed == 4 }},
		{[]string{"model={heads: 8, d_model: 64}"}, func(c Config) bool { return c.Model.Heads == 8 && c.Model.DModel == 64 && c.Model.Layers == 1 }},
		{[]string{"model.mlp=true"}, func(c Config) bool { return c.Model.DFF == 128 }},
		{[]string{"model.mlp=true", "model.d_model=64"}, func(c Config) bool { return c.Model.DFF == 256 }},
		{[]string{"model.mlp=true", "model.d_ff=100"}, func(c Config) bool { return c.Model.DFF == 100 }},
		{[]string{"model.d_ff=100"}, func(c Config) bool { return c.Model.DFF == 0 }},
		{[]string{"train.schedule=cosine", "train.min_lr=0"}, func(c Config) bool { return c.Train.Schedule == "cosine" }},
		{[]string{"task.length=3", "task.symbols=5"}, func(c Config) bool { return c.Model.Vocab == 6 && c.Model.Context == 6 }},
		{[]string{"train.eval_every=0", "train.eval_size=0"}, func(c Config) bool { return c.Train.EvalEvery == 0 }},
	}
	for _, c := range cases {
		cfg, err := ParseConfig("x.yaml", []byte(file), c.sets)
		if err != nil {
			t.Errorf("sets %q: %v", c.sets, err)
			continue
		}
		if !c.check(cfg) {
			t.Errorf("sets %q: got %+v", c.sets, cfg)
		}
		roundTrip(t, strings.Join(c.sets, " "), cfg)
	}
}

// TestDefaults checks that a file naming one key keeps every other default,
// and that the defaults are the documented ones.
func TestDefaults(t *testing.T) {
	cfg, err := ParseConfig("x.yaml", []byte("seed: 5\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Seed:  5,
		Task:  data.TaskConfig{Name: "copy", Length: 8, Symbols: 16},
		Model: model.Config{Vocab: 17, Context: 16, DModel: 32, Heads: 4, Layers: 1, OutBias: true, Attention: "fused"},
		Train: TrainConfig{
			BatchSize: 32, Steps: 1000, LR: 3e-3, Schedule: "constant", GradClip: 1,
			Beta1: 0.9, Beta2: 0.999, Eps: 1e-8,
			LogEvery: 10, EvalEvery: 100, EvalSize: 1000, CheckpointEvery: 100,
		},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("got  %+v\nwant %+v", cfg, want)
	}
}

// TestRoundTripEveryField sets every key away from its default and checks
// that YAML() reproduces all of them.
func TestRoundTripEveryField(t *testing.T) {
	src := `
seed: 18446744073709551615
task: {name: reverse, length: 5, symbols: 7}
model: {d_model: 48, heads: 3, layers: 2, mlp: true, d_ff: 100, qkv_bias: true, out_bias: false, lm_head_bias: true, dropout: 0.125}
train:
  batch_size: 7
  steps: 123
  lr: 1.0e-4
  schedule: cosine
  warmup_steps: 9
  min_lr: 3.3e-5
  grad_clip: 0.3
  weight_decay: 0.05
  beta1: 0.8
  beta2: 0.95
  eps: 1.0e-6
  log_every: 0
  eval_every: 7
  eval_size: 11
  checkpoint_every: 0
`
	cfg, err := ParseConfig("x.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Seed != math.MaxUint64 || cfg.Model.Dropout != 0.125 || cfg.Train.MinLR != 3.3e-5 || !cfg.Model.LMBias {
		t.Fatalf("values not read: %+v", cfg)
	}
	roundTrip(t, "every field", cfg)
	def := DefaultConfig()
	if err := def.Resolve(); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, "defaults", def)
}

// TestEstimateBytes pins the estimate for the default config, counted by
// hand (model.Config.TrainMemory): params 17·32 + 16·32 + 96·32 + 32·32 +
// 32 + 17·32 = 5728, as float32 weights, two replicas' float32 gradients
// and two float64 moments, 4 + 8 + 16 bytes each = 160384; training
// forward at B·T = 512: block 12·512·32 + 4·32·4·16·16 = 327680,
// embeddings and head 4·512·32 + 4·512·17 = 100352, once (the one-shot
// machine lets each go in the backward pass) = 428032 (no tied head's
// gradient to hold); evaluation forward at 250
// rows (1000 held-out rows in four equal chunks, B·T = 4000) on its
// one-shot machine: 12·4000·32 + 4·250·4·16·16 = 2560000 plus 4·4000·32 +
// 2·4000·17 = 648000; activations 4 bytes each; the held-out set, 1000
// rows of 16 positions at 24 bytes each = 384000 (issue 11: it was not
// counted, and eval_size=1e9 died of a fatal out-of-memory instead of
// being refused).
func TestEstimateBytes(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Resolve(); err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.EstimateBytes(), 160384+4*(428032+2560000+648000.0)+384000; got != want {
		t.Errorf("EstimateBytes(default) = %v, want %v", got, want)
	}
	cfg.Train.EvalEvery = 0
	if got, want := cfg.EstimateBytes(), 160384+4*428032.0; got != want {
		t.Errorf("EstimateBytes without evaluation = %v, want %v", got, want)
	}
}

// checkParsed is what both fuzz targets assert: an error is one line, and a
// success is a valid config whose rendering parses back to itself.
func checkParsed(t *testing.T, cfg Config, err error) {
	t.Helper()
	if err != nil {
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("message spans lines: %q", err)
		}
		return
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("ParseConfig accepted a config Validate rejects: %v", err)
	}
	roundTrip(t, "fuzz", cfg)
}

// FuzzParseConfig starts from every example config and the edge cases in
// testdata/fuzz/FuzzParseConfig.
func FuzzParseConfig(f *testing.F) {
	paths, _ := filepath.Glob("../configs/*.yaml")
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, err := ParseConfig("fuzz.yaml", src, nil)
		checkParsed(t, cfg, err)
	})
}

// FuzzSet's seeds are in testdata/fuzz/FuzzSet.
func FuzzSet(f *testing.F) {
	f.Fuzz(func(t *testing.T, set string) {
		cfg, err := ParseConfig("fuzz.yaml", []byte("seed: 1\n"), []string{set})
		checkParsed(t, cfg, err)
	})
}

// TestPartsKeys: the keys of today's open models read from YAML, round
// trip through YAML and JSON (a switch set false stays false, set true
// stays set), and are absent from a config that does not set them, whose
// model reads as GPT-2's block. SwiGLU's default d_ff is 2/3 of 4·D
// rounded up to a multiple of 32.
func TestPartsKeys(t *testing.T) {
	cfg, err := ParseConfig("x.yaml", []byte(`
task: {name: copy, length: 8, symbols: 16}
model: {d_model: 48, heads: 4, layers: 2, mlp: true, norm: layernorm, norm_bias: false, norm_eps: 1.0e-6,
        activation: swiglu, mlp_bias: false, tie_embeddings: true, qk_norm: true, position: rope}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Model
	if m.NormHasBias() || m.MLPBias.On() || !m.MLPBias.Set() || m.Eps() != 1e-6 || !m.TieEmbeddings || !m.QKNorm || m.DFF != 128 {
		t.Fatalf("parts not read: %+v", m)
	}
	roundTrip(t, "parts", cfg)
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	back, err := fromJSON(raw)
	if err != nil || !reflect.DeepEqual(back, cfg) {
		t.Fatalf("JSON round trip: %v, %+v", err, back.Model)
	}
	plain, err := ParseConfig("x.yaml", []byte("model: {mlp: true}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err = json.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"norm", "norm_bias", "norm_eps", "activation", "mlp_bias", "tie_embeddings", "qk_norm"} {
		if strings.Contains(string(raw), `"`+key+`"`) {
			t.Errorf("a config that does not set %s writes it: %s", key, raw)
		}
	}
	if p := plain.Model; !p.NormHasBias() || !p.MLPBias.On() || p.ActivationKind() != "gelu_tanh" || p.Eps() != 1e-5 || p.DFF != 4*p.DModel {
		t.Errorf("an unset part does not read as GPT-2's: %+v", p)
	}
	_, err = ParseConfig("x.yaml", []byte("model: {mlp: true, mlp_bias: 0}\n"), nil)
	msgtest.Refusal(t, "a number for a switch", err, "x.yaml:1:30: model.mlp_bias = 0: want true or false")
}

// fromJSON decodes a config's JSON as a checkpoint's reader does (package
// checkpoint, which also bounds its size and depth and refuses a repeated
// key): over DefaultConfig, every key known.
func fromJSON(raw []byte) (Config, error) {
	cfg := DefaultConfig()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(&cfg)
	return cfg, err
}
