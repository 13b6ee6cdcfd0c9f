package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pkg/errors"
	"go.yaml.in/yaml/v3"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
)

// Config is everything a run needs: the seed, the task, the model and the
// optimisation schedule. Its JSON form (with model.vocab and model.context
// filled in) is what a checkpoint carries.
type Config struct {
	Seed  uint64          `yaml:"seed" json:"seed"` // drives weights, batches, dropout and the eval set
	Task  data.TaskConfig `yaml:"task" json:"task"`
	Model model.Config    `yaml:"model" json:"model"` // Vocab and Context are filled from the task by Resolve
	Train TrainConfig     `yaml:"train" json:"train"`
}

// TrainConfig is the optimisation schedule and the run's bookkeeping.
type TrainConfig struct {
	BatchSize   int     `yaml:"batch_size" json:"batch_size"`     // sequences per step
	Steps       int     `yaml:"steps" json:"steps"`               // optimizer updates in the run
	LR          float64 `yaml:"lr" json:"lr"`                     // peak learning rate
	Schedule    string  `yaml:"schedule" json:"schedule"`         // "constant" or "cosine" after warmup
	WarmupSteps int     `yaml:"warmup_steps" json:"warmup_steps"` // linear warmup from 0 to lr; 0 = none
	MinLR       float64 `yaml:"min_lr" json:"min_lr"`             // where the cosine ends (cosine only)
	GradClip    float64 `yaml:"grad_clip" json:"grad_clip"`       // global gradient-norm clip; 0 = off
	WeightDecay float64 `yaml:"weight_decay" json:"weight_decay"` // decoupled (AdamW) decay; 0 = off
	Beta1       float64 `yaml:"beta1" json:"beta1"`               // Adam first-moment decay
	Beta2       float64 `yaml:"beta2" json:"beta2"`               // Adam second-moment decay
	Eps         float64 `yaml:"eps" json:"eps"`                   // Adam denominator epsilon
	// Intervals in steps; 0 turns the activity off.
	LogEvery        int `yaml:"log_every" json:"log_every"`               // training metrics lines
	EvalEvery       int `yaml:"eval_every" json:"eval_every"`             // evaluation on the held-out set
	EvalSize        int `yaml:"eval_size" json:"eval_size"`               // rows in the held-out set
	CheckpointEvery int `yaml:"checkpoint_every" json:"checkpoint_every"` // checkpoint saves
}

// Schedules lists the allowed values of train.schedule.
var Schedules = []string{"constant", "cosine"}

// MaxMemory is the largest estimated footprint (EstimateBytes) a config may
// have. It keeps a typo such as batch_size: 32000 from swapping a laptop to a
// halt after the graph is half built.
const MaxMemory = 8 << 30

// DefaultConfig is the configuration every file is decoded over: a key the
// file leaves out keeps the value given here.
func DefaultConfig() Config {
	return Config{
		Seed: 1,
		Task: data.TaskConfig{Name: "copy", Length: 8, Symbols: 16},
		Model: model.Config{
			DModel: 32, Heads: 4, Layers: 1,
			OutBias: true, Attention: "fused",
		},
		Train: TrainConfig{
			BatchSize: 32, Steps: 1000, LR: 3e-3, Schedule: "constant",
			GradClip: 1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8,
			LogEvery: 10, EvalEvery: 100, EvalSize: 1000, CheckpointEvery: 100,
		},
	}
}

// LoadConfig reads the YAML file at path over DefaultConfig, applies the
// -set overrides in order, resolves the fields derived from the task and
// validates the result. Every error is one line naming the file or -set, the
// key, the value and what is allowed; a YAML syntax error names the file,
// line and column. A file longer than MaxConfigBytes is refused.
func LoadConfig(path string, sets []string) (Config, error) {
	src, err := readConfig(path)
	if err != nil {
		return Config{}, err
	}
	return ParseConfig(path, src, sets)
}

// MaxConfigBytes is the size of the largest config file LoadConfig reads.
// Real configs are a few kilobytes; the limit keeps a wrong path (a log, a
// checkpoint, /dev/zero) from being read into memory whole, or forever.
const MaxConfigBytes = 1 << 20

// readConfig returns the bytes of the config file at path, refusing
// anything longer than MaxConfigBytes. A directory fails to read ("read
// PATH: is a directory").
func readConfig(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Wrap(err, "reading config")
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, errors.Wrap(err, "reading config")
	}
	if len(src) > MaxConfigBytes {
		return nil, errors.Errorf("%s: config is larger than %d MiB", path, MaxConfigBytes>>20)
	}
	return src, nil
}

// ParseConfig is LoadConfig on the bytes src; name is used in messages.
func ParseConfig(name string, src []byte, sets []string) (Config, error) {
	cfg := DefaultConfig()
	root, syntaxErr := parseYAML(src)
	if syntaxErr != nil {
		return Config{}, errors.Errorf("%s: %s", syntaxErr.where(name), syntaxErr)
	}
	if root == nil {
		return Config{}, errors.Errorf("%s: empty config", name)
	}
	if err := assign(reflect.ValueOf(&cfg).Elem(), root, "", func(n *yaml.Node) string {
		return fmt.Sprintf("%s:%d:%d", name, n.Line, n.Column)
	}); err != nil {
		return Config{}, err
	}
	for _, set := range sets {
		if err := applySet(&cfg, set); err != nil {
			return Config{}, err
		}
	}
	if err := cfg.Resolve(); err != nil {
		return Config{}, errors.Wrap(err, name)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, errors.Wrap(err, name)
	}
	return cfg, nil
}

// ParseConfigJSON decodes a resolved config as stored in a checkpoint's
// metadata, over DefaultConfig, rejecting unknown keys, and validates it.
func ParseConfigJSON(name string, src []byte) (Config, error) {
	cfg := DefaultConfig()
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, errors.Wrapf(err, "%s: run config", name)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, errors.Wrapf(err, "%s: run config", name)
	}
	return cfg, nil
}

// Resolve fills what the task and the model's shape determine: Model.Vocab
// and Model.Context from the task, and Model.DFF (4·DModel when the blocks
// have an MLP and it is unset, 0 when they have none, since it is unused).
func (c *Config) Resolve() error {
	task, err := data.New(c.Task)
	if err != nil {
		return err
	}
	c.Model.Vocab, c.Model.Context = task.Vocab(), task.SeqLen()
	switch {
	case !c.Model.MLP:
		c.Model.DFF = 0
	case c.Model.DFF == 0:
		c.Model.DFF = 4 * c.Model.DModel
	}
	return nil
}

// Validate reports the first setting a run cannot use, naming the key, its
// value and what is allowed. A Config from ParseConfig always passes.
func (c Config) Validate() error {
	if err := c.Task.Validate(); err != nil {
		return err
	}
	floats := []struct {
		key   string
		value float64
	}{
		{"model.dropout", c.Model.Dropout}, {"train.lr", c.Train.LR}, {"train.min_lr", c.Train.MinLR},
		{"train.grad_clip", c.Train.GradClip}, {"train.weight_decay", c.Train.WeightDecay},
		{"train.beta1", c.Train.Beta1}, {"train.beta2", c.Train.Beta2}, {"train.eps", c.Train.Eps},
	}
	for _, f := range floats {
		if math.IsNaN(f.value) || math.IsInf(f.value, 0) {
			return errors.Errorf("%s = %v: must be a finite number", f.key, f.value)
		}
	}
	if err := c.Model.Validate(); err != nil {
		return err
	}
	task, err := data.New(c.Task)
	if err != nil {
		return err
	}
	if c.Model.Vocab != task.Vocab() {
		return errors.Errorf("model.vocab = %d does not match the vocabulary of task %s (%d)", c.Model.Vocab, task.Name(), task.Vocab())
	}
	if c.Model.Context != task.SeqLen() {
		return errors.Errorf("model.context = %d does not match the sequence length of task %s (%d)", c.Model.Context, task.Name(), task.SeqLen())
	}
	if err := c.Train.validate(); err != nil {
		return err
	}
	if est := c.EstimateBytes(); est > MaxMemory {
		return errors.Errorf("the run needs an estimated %s (training graph of %d x %d positions, evaluation graph of %d rows; limit %s): reduce train.batch_size, task.length or the model size",
			gib(est), c.Train.BatchSize, task.SeqLen(), c.evalBatch(), gib(MaxMemory))
	}
	return nil
}

func (t TrainConfig) validate() error {
	positive := []struct {
		key   string
		value int
	}{{"train.batch_size", t.BatchSize}, {"train.steps", t.Steps}}
	for _, p := range positive {
		if p.value <= 0 {
			return errors.Errorf("%s = %d: must be positive", p.key, p.value)
		}
	}
	nonNegative := []struct {
		key   string
		value int
	}{
		{"train.warmup_steps", t.WarmupSteps}, {"train.log_every", t.LogEvery}, {"train.eval_every", t.EvalEvery},
		{"train.eval_size", t.EvalSize}, {"train.checkpoint_every", t.CheckpointEvery},
	}
	for _, p := range nonNegative {
		if p.value < 0 {
			return errors.Errorf("%s = %d: must be 0 or more", p.key, p.value)
		}
	}
	switch {
	case t.WarmupSteps > t.Steps:
		return errors.Errorf("train.warmup_steps = %d: must not exceed train.steps = %d", t.WarmupSteps, t.Steps)
	case t.EvalEvery > 0 && t.EvalSize == 0:
		return errors.Errorf("train.eval_size = 0: must be positive when train.eval_every = %d (set eval_every: 0 to turn evaluation off)", t.EvalEvery)
	case t.LR <= 0:
		return errors.Errorf("train.lr = %v: must be positive", t.LR)
	case t.MinLR < 0 || t.MinLR > t.LR:
		return errors.Errorf("train.min_lr = %v: must be in [0, train.lr = %v]", t.MinLR, t.LR)
	case t.GradClip < 0:
		return errors.Errorf("train.grad_clip = %v: must be 0 (off) or positive", t.GradClip)
	case t.WeightDecay < 0:
		return errors.Errorf("train.weight_decay = %v: must be 0 (off) or positive", t.WeightDecay)
	case t.Beta1 < 0 || t.Beta1 >= 1:
		return errors.Errorf("train.beta1 = %v: must be in [0, 1)", t.Beta1)
	case t.Beta2 < 0 || t.Beta2 >= 1:
		return errors.Errorf("train.beta2 = %v: must be in [0, 1)", t.Beta2)
	case t.Eps <= 0:
		return errors.Errorf("train.eps = %v: must be positive", t.Eps)
	}
	for _, s := range Schedules {
		if t.Schedule == s {
			return nil
		}
	}
	return errors.Errorf("train.schedule = %q: unknown schedule (want one of: %s)", t.Schedule, strings.Join(Schedules, ", "))
}

// EstimateBytes is a rough upper estimate of the memory a run takes, in
// bytes, for Run's float32 models (modelDtype) and a TapeMachine that keeps
// the value of every node: per weight, its value, its gradient and the two
// float64 Adam moments; the forward and backward activations of the training
// graph; and the forward-only evaluation graph of up to MaxEvalBatch rows.
// Per block a graph holds about 12 (B·T, D) tensors for attention
// (projections, head split, transposes, output, residual) plus 4 (B, H, T, T)
// ones (scores, scaled, softmax, dropout), and about 8 (B·T, D) and 8 (B·T, F)
// more with an MLP (LayerNorms, GELU's intermediates); embeddings and the LM
// head add 4 (B·T, D) and 4 (B·T, V). The backward pass is counted as big as
// the forward. The config must have been resolved (Vocab and Context set).
func (c Config) EstimateBytes() float64 {
	m := c.Model
	// Every block has the same tensors, so the count is linear in Layers;
	// listing the specs of 0 and 1 layers avoids a slice per block for an
	// absurd layer count.
	size := func(layers int) float64 {
		one := m
		one.Layers = layers
		total := 0.0
		for _, spec := range one.ParamSpecs() {
			n := 1.0
			for _, s := range spec.Shape {
				n *= float64(s)
			}
			total += n
		}
		return total
	}
	params := size(0) + float64(m.Layers)*(size(1)-size(0))
	t, d, h, f, v := float64(m.Context), float64(m.DModel), float64(m.Heads), float64(m.DFF), float64(m.Vocab)
	forward := func(batch int) float64 {
		b := float64(batch)
		block := 12*b*t*d + 4*b*h*t*t
		if m.MLP {
			block += 8*b*t*d + 8*b*t*f
		}
		return float64(m.Layers)*block + 4*b*t*d + 4*b*t*v
	}
	activations := 2 * forward(c.Train.BatchSize)
	if c.Train.EvalEvery > 0 {
		activations += forward(c.evalBatch())
	}
	elem := float64(modelDtype.Size())
	return params*(2*elem+16) + activations*elem
}

// evalBatch is the batch of Run's evaluation graph.
func (c Config) evalBatch() int { return EvalBatch(c.Train.EvalSize) }

func gib(bytes float64) string { return fmt.Sprintf("%.1f GiB", bytes/(1<<30)) }

// YAML renders the resolved config; LoadConfig reads it back to an equal
// Config. The derived sizes appear in a leading comment, not as keys.
func (c Config) YAML() ([]byte, error) {
	var out bytes.Buffer
	fmt.Fprintf(&out, "# attnscope run config (resolved); from the task: model vocab = %d, context = %d\n", c.Model.Vocab, c.Model.Context)
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, errors.Wrap(err, "rendering config")
	}
	if err := enc.Close(); err != nil {
		return nil, errors.Wrap(err, "rendering config")
	}
	return out.Bytes(), nil
}

// derivedKeys explains the model keys that Resolve fills, for the error a
// file setting them gets.
var derivedKeys = map[string]string{
	"model.vocab":   "it comes from the task (task.symbols, plus the separator for copy, reverse and sort)",
	"model.context": "it is the task's sequence length (task.length, doubled for copy, reverse and sort)",
}

// yamlLine matches the position yaml.v3 puts in its syntax errors.
var yamlLine = regexp.MustCompile(`^yaml: (?:line (\d+): )?`)

// syntaxError is a YAML syntax error rewritten onto one line.
type syntaxError struct {
	line   int // 1-based
	column int // 1-based, in characters; 0 when locate could not afford to find it
	msg    string
}

func (e *syntaxError) Error() string { return "YAML syntax: " + e.msg }

// where prefixes the file name with the error's position.
func (e *syntaxError) where(name string) string {
	if e.column == 0 {
		return fmt.Sprintf("%s:%d", name, e.line)
	}
	return fmt.Sprintf("%s:%d:%d", name, e.line, e.column)
}

// parseYAML parses exactly one YAML document; it returns nil for an empty
// one. A syntax error carries the line and column of its culprit (locate).
func parseYAML(src []byte) (*yaml.Node, *syntaxError) {
	root, err := decodeYAML(src, "")
	if err != nil && err.column == 0 {
		locate(src, err)
	}
	return root, err
}

// decodeYAML is parseYAML without the column of a syntax error: it parses
// src followed by suffix, reading one byte at a time so that the parser
// decodes no character it does not ask for (see locate).
func decodeYAML(src []byte, suffix string) (*yaml.Node, *syntaxError) {
	dec := yaml.NewDecoder(&byteReader{src: src, suffix: suffix})
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, nil
		}
		return nil, rewrite(err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, &syntaxError{line: extra.Line, column: extra.Column, msg: "a second YAML document starts here; a config is one document"}
	case err != io.EOF:
		return nil, rewrite(err)
	}
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil, nil
	}
	return doc.Content[0], nil
}

// byteReader yields src and then suffix, one byte per Read. yaml.v3 decodes
// every byte a Read returns (checking each for control characters) but scans
// only the characters it asks for, so fed one byte at a time it reads no
// further than it looks.
type byteReader struct {
	src    []byte
	suffix string
}

func (r *byteReader) Read(p []byte) (int, error) {
	switch {
	case len(p) == 0:
		return 0, nil
	case len(r.src) > 0:
		p[0], r.src = r.src[0], r.src[1:]
	case len(r.suffix) > 0:
		p[0], r.suffix = r.suffix[0], r.suffix[1:]
	default:
		return 0, io.EOF
	}
	return 1, nil
}

// locateBudget bounds the bytes locate may parse (about 0.1 s): it finds
// the column of an error in a config of a few kilobytes with a few dozen
// parses, and gives up on a huge file rather than stall.
const locateBudget = 1 << 20

// locateLinear is how many prefixes locate tries one by one before it
// gallops.
const locateLinear = 64

// locate sets e's line and column to the culprit of the syntax error e that
// parsing src gave, when it can find it within locateBudget.
//
// yaml.v3 keeps the column of an error to itself, and its line is sometimes
// where the enclosing construct opened, sometimes where the problem is. So
// locate asks the parser two things:
//
//  1. How far did it read? Parsing src[:k] followed by a NUL byte (a
//     character YAML forbids) fails with e exactly when the parser gives up
//     before looking at position k, a monotone property, so a binary search
//     finds the smallest such k: the detection point d.
//  2. Where did the problem become certain? Going back from d, locate finds
//     the shortest prefix src[:c] such that every prefix from c to d,
//     cut there (end of input), fails with e too. The last character of
//     src[:c] is the culprit: a tab, a stray ']', the ':' of "a: b: c", a
//     key indented wrongly, the opening quote of a string never closed, or
//     the last value before a '}' or ',' that is missing.
//
// Step 2 skips blank and comment-only lines, and past locateLinear prefixes
// it assumes the run of failing prefixes is unbroken and gallops (true of an
// unclosed quote, the one long run). A few thousand bytes need a few dozen
// parses; when the search would parse more than locateBudget bytes, e keeps
// yaml.v3's line and no column.
func locate(src []byte, e *syntaxError) {
	budget := locateBudget
	probe := "\x00"
	if e.msg == "control characters are not allowed" {
		probe = "\xff"
	}
	exhausted := false
	fails := func(k int, suffix string) bool {
		if budget < k {
			exhausted = true
			return false
		}
		budget -= k + len(suffix)
		_, got := decodeYAML(src[:k], suffix)
		return got != nil && got.line == e.line && got.msg == e.msg
	}
	// No prefix fails before the probe when the parser reads to the end of
	// src; sort.Search then returns len(src).
	d := sort.Search(len(src), func(k int) bool { return fails(k, probe) })
	if exhausted || !fails(d, "") {
		return
	}
	c := d
	for steps := 0; ; steps++ {
		if steps == locateLinear {
			c = gallop(src, c, fails)
			break
		}
		k := prevBoundary(src, c)
		for k > 0 && blankOrComment(src, k-1) {
			k = prevBoundary(src, k)
		}
		if k < 0 || !fails(k, "") {
			break
		}
		c = k
	}
	if exhausted || c == 0 {
		return
	}
	e.line, e.column = position(src, prevBoundary(src, c))
}

// gallop returns the start of the run of prefix lengths, ending at hi, for
// which fails holds, assuming the run is unbroken: it steps back in doubling
// strides to a length where fails does not hold, then bisects.
func gallop(src []byte, hi int, fails func(k int, suffix string) bool) int {
	lo := 0
	for stride := locateLinear; hi-stride > 0; stride *= 2 {
		k := alignUp(src, hi-stride, hi)
		if !fails(k, "") {
			lo = k
			break
		}
		hi = k
	}
	for hi-lo > 1 {
		mid := alignUp(src, lo+(hi-lo)/2, hi)
		if mid == hi {
			break
		}
		if fails(mid, "") {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// prevBoundary returns the largest k < c at which a character of src starts,
// or -1 when c is 0: src[:k] is src[:c] without its last character.
func prevBoundary(src []byte, c int) int {
	k := c - 1
	for k > 0 && !utf8.RuneStart(src[k]) {
		k--
	}
	return k
}

// blankOrComment reports whether byte i of src lies on a line (its line feed
// included) that holds nothing but blanks and perhaps a comment: cutting the
// input there tells locate nothing that cutting before the line does not.
func blankOrComment(src []byte, i int) bool {
	start := bytes.LastIndexByte(src[:i], '\n') + 1
	end := len(src)
	if n := bytes.IndexByte(src[i:], '\n'); n >= 0 {
		end = i + n
	}
	line := bytes.TrimSpace(src[start:end])
	return len(line) == 0 || line[0] == '#'
}

// alignUp moves k forward to the next character boundary, stopping at hi.
func alignUp(src []byte, k, hi int) int {
	for k < hi && k < len(src) && !utf8.RuneStart(src[k]) {
		k++
	}
	return k
}

// position returns the 1-based line and column of byte i of src the way
// yaml.v3 counts them: a column in characters, a byte order mark not
// counted, and CR LF, CR, LF, NEL, LS and PS each ending a line.
func position(src []byte, i int) (line, column int) {
	line, column = 1, 1
	for j := 0; j < i; {
		r, size := utf8.DecodeRune(src[j:])
		if r == '\r' && j+1 < i && src[j+1] == '\n' {
			size = 2
		}
		switch {
		case j == 0 && r == '\uFEFF':
		case r == '\r', r == '\n', r == '\u0085', r == '\u2028', r == '\u2029':
			line, column = line+1, 1
		default:
			column++
		}
		j += size
	}
	return line, column
}

// parserProblems are the messages yaml.v3's parser (as opposed to its
// scanner) reports. yaml.v3 prints a parser error's line 0-based and a
// scanner error's 1-based, and leaves a 0 out, so the line needs mending.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'": true, "did not find expected ',' or '}'": true,
	"did not find expected '-' indicator": true, "did not find expected <document start>": true,
	"did not find expected <stream-start>": true, "did not find expected key": true,
	"did not find expected node content": true, "found duplicate %TAG directive": true,
	"found duplicate %YAML directive": true, "found incompatible YAML document": true,
	"found undefined tag handle": true,
}

// rewrite turns yaml.v3's "yaml: line 3: did not find expected key" into a
// syntaxError with a 1-based line.
func rewrite(err error) *syntaxError {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		if m[1] != "" {
			line, _ = strconv.Atoi(m[1])
		}
		msg = msg[len(m[0]):]
	}
	if line == 0 || parserProblems[msg] {
		line++
	}
	return &syntaxError{line: line, msg: msg}
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// applySet applies one "-set key=value" override: value is parsed as YAML and
// assigned to the field at the dotted key exactly as if the file held it.
func applySet(cfg *Config, set string) error {
	key, value, ok := strings.Cut(set, "=")
	if !ok || key == "" {
		return errors.Errorf("-set %s: want key=value", clean(set))
	}
	where := func(*yaml.Node) string { return "-set " + clean(set) }
	field, path := reflect.ValueOf(cfg).Elem(), ""
	for _, name := range strings.Split(key, ".") {
		next, err := lookup(field, path, name)
		if err != nil {
			return errors.Errorf("%s: %s", where(nil), err)
		}
		field, path = next, join(path, name)
	}
	node, syntaxErr := parseYAML([]byte(value))
	if syntaxErr != nil {
		return errors.Errorf("%s: %s", where(nil), syntaxErr)
	}
	if node == nil {
		node = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	return assign(field, node, path, where)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// keys lists the YAML keys of a struct type, in field order.
func keys(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("yaml"); tag != "-" {
			names = append(names, tag)
		}
	}
	return names
}

// lookup returns the field of struct v whose YAML key is name; path is v's
// own key path, for the message.
func lookup(v reflect.Value, path, name string) (reflect.Value, error) {
	full := join(path, clean(name))
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, errors.Errorf("unknown key %s (%s is not a section)", full, path)
	}
	for i := range v.NumField() {
		if v.Type().Field(i).Tag.Get("yaml") == name && name != "-" {
			return v.Field(i), nil
		}
	}
	if why, ok := derivedKeys[full]; ok {
		return reflect.Value{}, errors.Errorf("%s cannot be set: %s", full, why)
	}
	return reflect.Value{}, errors.Errorf("unknown key %s (allowed: %s)", full, strings.Join(keys(v.Type()), ", "))
}

// describe names the kind of a non-scalar node for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	if isNull(n) {
		return "no value"
	}
	return "a value"
}

// show prints a scalar the way the user wrote it, quoting strings.
func show(n *yaml.Node) string {
	if n.ShortTag() == "!!str" {
		return strconv.Quote(n.Value)
	}
	return clean(n.Value)
}

// clean returns s, or s quoted when it holds a character (a newline, say)
// that would garble a one-line message.
func clean(s string) string {
	if q := strconv.Quote(s); q[1:len(q)-1] != s {
		return q
	}
	return s
}

// assign decodes n into v, the value at key path. Sections must be mappings
// of known keys, each at most once (a null section keeps its defaults);
// leaves must be scalars of the field's type. where gives a node's position
// for messages.
func assign(v reflect.Value, n *yaml.Node, path string, where func(*yaml.Node) string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if v.Kind() == reflect.Struct {
		return assignSection(v, n, path, where)
	}
	if n.Kind != yaml.ScalarNode || isNull(n) {
		return errors.Errorf("%s: %s: %s, got %s", where(n), path, want(v.Kind()), describe(n))
	}
	var err error
	switch v.Kind() {
	case reflect.String:
		v.SetString(n.Value)
	case reflect.Bool:
		if n.ShortTag() != "!!bool" {
			err = errors.New("not a boolean")
		} else {
			err = n.Decode(v.Addr().Interface())
		}
	default:
		err = n.Decode(v.Addr().Interface())
		if err == nil && (v.CanInt() || v.CanUint()) {
			err = integral(n, v)
		}
	}
	if err != nil {
		return errors.Errorf("%s: %s = %s: %s", where(n), path, show(n), want(v.Kind()))
	}
	return nil
}

func assignSection(v reflect.Value, n *yaml.Node, path string, where func(*yaml.Node) string) error {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		section := "the config"
		if path != "" {
			section = path
		}
		return errors.Errorf("%s: %s: want a mapping with keys %s, got %s", where(n), section, strings.Join(keys(v.Type()), ", "), describe(n))
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, value := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return errors.Errorf("%s: %s: a key must be a plain name, got %s", where(k), join(path, "?"), describe(k))
		}
		if first, dup := seen[k.Value]; dup {
			return errors.Errorf("%s: duplicate key %s (first set at line %d)", where(k), join(path, clean(k.Value)), first.Line)
		}
		seen[k.Value] = k
		field, err := lookup(v, path, k.Value)
		if err != nil {
			return errors.Errorf("%s: %s", where(k), err)
		}
		if err := assign(field, value, join(path, k.Value), where); err != nil {
			return err
		}
	}
	return nil
}

// integral rejects a fraction that yaml.v3 truncated into an integer field
// (it decodes 2.5 into an int as 2).
func integral(n *yaml.Node, v reflect.Value) error {
	if n.ShortTag() != "!!float" {
		return nil
	}
	var f float64
	if err := n.Decode(&f); err != nil {
		return err
	}
	if (v.CanInt() && float64(v.Int()) != f) || (v.CanUint() && float64(v.Uint()) != f) {
		return errors.New("not an integer")
	}
	return nil
}

// want says what a field of kind k accepts.
func want(k reflect.Kind) string {
	switch k {
	case reflect.Int:
		return "want an integer"
	case reflect.Uint64:
		return "want an integer >= 0"
	case reflect.Float64:
		return "want a number"
	case reflect.Bool:
		return "want true or false"
	}
	return "want a string"
}
