package rundir

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"github.com/pkg/errors"
	"go.yaml.in/yaml/v3"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/initfrom"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/internal/strictyaml"
	"github.com/attnscope/attnscope/model"
)

// Config is everything a run needs: the seed, the task, the model and the
// optimisation schedule. Its JSON form (with model.vocab and model.context
// filled in) is what a checkpoint carries.
type Config struct {
	Seed uint64 `yaml:"seed" json:"seed"` // drives weights, batches, dropout and the eval set
	// InitFrom names a pretrained model to fine-tune (a Hugging Face model
	// directory, a nanoGPT ckpt.pt): the model section and the weights come
	// from it, and the text task is read through its tokenizer. "" trains
	// a model from seeded weights.
	InitFrom string          `yaml:"init_from,omitempty" json:"init_from,omitempty"`
	Task     data.TaskConfig `yaml:"task" json:"task"`
	Model    model.Config    `yaml:"model" json:"model"` // Vocab and Context are filled from the task (or init) by Resolve
	Train    TrainConfig     `yaml:"train" json:"train"`
	// Init records the pretrained model of InitFrom, filled when the run
	// starts (initfrom.Record).
	Init initfrom.Record `yaml:"init,omitempty" json:"init,omitzero"`
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
	// EvalLengths are extra task lengths (task.length values) the model is
	// evaluated at, on a held-out set of eval_size rows each, at every
	// evaluation: length generalisation. Each gives a metrics line with
	// eval_length.
	EvalLengths []int `yaml:"eval_lengths,omitempty" json:"eval_lengths,omitempty"`
	// EvalGenerate also writes every held-out answer greedily with the KV
	// cache at each evaluation (package generate) and logs gen_seq_acc and
	// gen_token_acc beside the teacher-forced seq_acc and token_acc.
	EvalGenerate bool `yaml:"eval_generate,omitempty" json:"eval_generate,omitempty"`
	// Probes turns the probes of every evaluation (head roles, circuit
	// metrics) "on" or "off"; "" is on, except for a model trained
	// elsewhere (init_from), where one probe of a pretrained model's every
	// head costs more than the run's training (RunsProbes).
	Probes string `yaml:"probes,omitempty" json:"probes,omitempty"`
	// Moments is the dtype of Adam's two moments, "float32" or "float64";
	// "" is float64, except with init_from: a pretrained model's float64
	// moments would take four times its float32 weights, and PyTorch keeps
	// them in the weights' dtype (MomentBytes).
	Moments string `yaml:"moments,omitempty" json:"moments,omitempty"`
}

// The values of train.moments besides "" (the default).
const (
	MomentsFloat32 = "float32"
	MomentsFloat64 = "float64"
)

// MomentBytes is the size of one of Adam's moment values: 4 or 8, as
// train.moments says, by default 8 unless the run fine-tunes (init_from).
func (c Config) MomentBytes() int {
	if c.Train.Moments == MomentsFloat32 || c.Train.Moments == "" && c.FineTunes() {
		return 4
	}
	return 8
}

// The values of train.probes besides "" (the default).
const (
	ProbesOn  = "on"
	ProbesOff = "off"
)

// RunsProbes says whether the run's evaluations probe the model: as
// train.probes says, by default unless it fine-tunes (init_from).
func (c Config) RunsProbes() bool {
	return c.Train.Probes == ProbesOn || c.Train.Probes == "" && !c.FineTunes()
}

// MaxSteps bounds train.steps: a trillion steps is more than any run here
// takes, and keeps every size derived from it (the logs' limits on resume)
// far inside an int64. MaxEvalLengths bounds train.eval_lengths likewise.
const (
	MaxSteps       = 1_000_000_000_000
	MaxEvalLengths = 64
)

// Schedules lists the allowed values of train.schedule.
var Schedules = []string{"constant", "cosine"}

// scheduleAliases are other words for Schedules, suggested when a config
// uses one (msg.DidYouMean).
var scheduleAliases = map[string]string{"cos": "cosine", "fixed": "constant", "none": "constant"}

// MaxMemory is the largest estimated footprint (EstimateBytes) a config may
// have: model.MaxMemory.
const MaxMemory = model.MaxMemory

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
	return LoadConfigFrom(path, sets, nil)
}

// LoadConfigFrom is LoadConfig for a command that opens pretrained models:
// a config naming init_from is decoded over the model open returns
// (fromPretrained). LoadConfig refuses such a config.
func LoadConfigFrom(path string, sets []string, open OpenPretrained) (Config, error) {
	src, err := readConfig(path)
	if err != nil {
		return Config{}, err
	}
	return parseConfig(path, src, sets, decoder{Fixed: derivedKeys}, open)
}

// MaxConfigBytes is the size of the largest config file LoadConfig reads.
// Real configs are a few kilobytes; the limit keeps a wrong path (a log, a
// checkpoint, /dev/zero) from being read into memory whole, or forever.
const MaxConfigBytes = 1 << 20

// readConfig returns the bytes of the config file at path, refusing
// anything longer than MaxConfigBytes and anything that is not a regular file
// (a directory, a named pipe that would block the open, a device) before
// reading it (safefile.ReadLimit).
func readConfig(path string) ([]byte, error) {
	src, err := safefile.ReadLimit(path, MaxConfigBytes, "a config may take")
	return src, errors.Wrap(err, "reading config")
}

// ParseConfig is LoadConfig on the bytes src; name is used in messages.
func ParseConfig(name string, src []byte, sets []string) (Config, error) {
	return parseConfig(name, src, sets, decoder{Fixed: derivedKeys}, nil)
}

// LoadRunConfig reads a run directory's own config file (ConfigFile), as
// train wrote it: LoadConfig, but the task's record of its text file
// (task.file, task.chars) is read from the file rather than refused, and
// no text file is read to resolve it.
func LoadRunConfig(path string, sets []string) (Config, error) {
	src, err := readConfig(path)
	if err != nil {
		return Config{}, err
	}
	return ParseRunConfig(path, src, sets)
}

// ParseRunConfig is LoadRunConfig on the bytes src.
func ParseRunConfig(name string, src []byte, sets []string) (Config, error) {
	return parseConfig(name, src, sets, decoder{Fixed: modelSizeKeys}, nil)
}

func parseConfig(name string, src []byte, sets []string, dec decoder, open OpenPretrained) (Config, error) {
	cfg, err := dec.decode(DefaultConfig(), name, src, sets)
	if err != nil {
		return Config{}, err
	}
	if cfg.FineTunes() && !cfg.Init.Recorded() {
		if cfg, err = fromPretrained(name, src, sets, dec, cfg, open); err != nil {
			return Config{}, err
		}
	}
	if err := cfg.Resolve(); err != nil {
		return Config{}, errors.Wrap(err, source(name, sets, err))
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, errors.Wrap(err, source(name, sets, err))
	}
	return cfg, nil
}

// decoder decodes a config file and its -set overrides.
type decoder strictyaml.Decoder

// decode is the config file src, then sets, decoded over base.
func (d decoder) decode(base Config, name string, src []byte, sets []string) (Config, error) {
	dec := strictyaml.Decoder(d)
	if err := dec.File(&base, name, src); err != nil {
		return Config{}, err
	}
	for _, set := range sets {
		if err := dec.Set(&base, set); err != nil {
			return Config{}, err
		}
	}
	return base, nil
}

// source names where the setting that err is about came from, so that a
// value given on the command line is not blamed on the file: the last -set
// of the key (or section) the message starts with, else the file, with the -set of any
// other key the message names.
func source(name string, sets []string, err error) string {
	text := err.Error()
	var named []string
	for i := len(sets) - 1; i >= 0; i-- {
		key, _, _ := strings.Cut(sets[i], "=")
		switch {
		case key == "":
		case strings.HasPrefix(text, key+" ") || strings.HasPrefix(text, key+":") || strings.HasPrefix(text, key+"."):
			return "-set " + msg.Clean(sets[i])
		case strings.Contains(text, key+" "):
			named = append([]string{"-set " + msg.Clean(sets[i])}, named...)
		}
	}
	if len(named) == 0 {
		return name
	}
	return name + " with " + strings.Join(named, ", ")
}

// Resolve fills what the task and the model's shape determine: for the
// text task, the record of its file (task.file: absolute path, size and
// SHA-256) and its characters (task.chars), read from task.path unless the
// config already records them; Model.Vocab and Model.Context from the task;
// and Model.DFF (4·DModel when the blocks have an MLP and it is unset, 0 when
// they have none, since it is unused).
func (c *Config) Resolve() error {
	if c.Task.Name == data.Text && c.Task.Validate() == nil && !c.Task.File.Recorded() {
		file, chars, err := data.RecordText(c.Task.Path)
		if err != nil {
			return err
		}
		c.Task.File = file
		if !c.FineTunes() {
			c.Task.Chars = chars
		}
	}
	if c.FineTunes() {
		if c.Init.Recorded() {
			c.Model.Vocab, c.Model.Context = c.Init.Vocab, c.Init.Context
		}
		return nil
	}
	task, err := data.Vocabulary(c.Task)
	if err != nil {
		return err
	}
	c.Model.Vocab, c.Model.Context = task.Vocab(), task.SeqLen()
	switch {
	case !c.Model.MLP:
		c.Model.DFF = 0
	case c.Model.DFF == 0:
		c.Model.DFF = c.Model.DefaultDFF()
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
	if c.FineTunes() {
		return c.validateFineTune()
	}
	if err := c.Model.Validate(); err != nil {
		return err
	}
	task, err := data.Vocabulary(c.Task)
	if err != nil {
		return err
	}
	if err := c.checkTaskSizes(task); err != nil {
		return err
	}
	if err := c.Train.validate(); err != nil {
		return err
	}
	if err := c.validateEvalLengths(); err != nil {
		return err
	}
	eval := "no evaluation"
	if c.Train.EvalEvery > 0 {
		eval = fmt.Sprintf("an evaluation graph of %d rows and a held-out set of %d rows taking %s", c.evalBatch(c.evalLength()), c.Train.EvalSize, msg.Bytes(c.heldOutBytes()))
	}
	if err := model.CheckMemory(c.EstimateBytes(), fmt.Sprintf("the run (a training graph of %d x %d positions, %s)", c.Train.BatchSize, task.SeqLen(), eval),
		"reduce train.batch_size, train.eval_size, task.length or the model size"); err != nil {
		return err
	}
	return nil
}

// ValidateModel checks what a model's forward needs of c: the model
// section, the task (no file it names is read) and their agreement on the
// vocabulary and the context. It is what every reader of a checkpoint
// applies; values only training uses (train.*, the seed) are not checked, so
// no reader refuses a checkpoint over them.
func (c Config) ValidateModel() error {
	if c.FineTunes() {
		return c.checkFineTuneModel()
	}
	if err := c.Task.Validate(); err != nil {
		return err
	}
	if err := c.Model.Validate(); err != nil {
		return err
	}
	if c.Task.Name == data.Text && c.Task.Chars == "" {
		// The characters come from the file, which the reader names.
		if c.Model.Context != c.Task.Length {
			return errors.Errorf("model.context = %d does not match task.length = %d of task text", c.Model.Context, c.Task.Length)
		}
		return nil
	}
	task, err := data.Vocabulary(c.Task)
	if err != nil {
		return err
	}
	return c.checkTaskSizes(task)
}

// checkTaskSizes refuses a model whose vocabulary or context is not the
// task's.
func (c Config) checkTaskSizes(task data.Task) error {
	if c.Model.Vocab != task.Vocab() {
		return errors.Errorf("model.vocab = %d does not match the vocabulary of task %s (%d)", c.Model.Vocab, task.Name(), task.Vocab())
	}
	if c.Model.Context != task.SeqLen() {
		return errors.Errorf("model.context = %d does not match the sequence length of task %s (%d)", c.Model.Context, task.Name(), task.SeqLen())
	}
	return nil
}

// validateEvalLengths checks each of train.eval_lengths: a length the task
// allows, listed once, that the model's positions reach.
func (c Config) validateEvalLengths() error {
	seen := map[int]bool{}
	for _, l := range c.Train.EvalLengths {
		task, err := data.AtLength(c.Task, l)
		switch {
		case c.Train.EvalEvery == 0:
			return errors.Errorf("train.eval_lengths = %v: needs train.eval_every > 0", c.Train.EvalLengths)
		case seen[l]:
			return errors.Errorf("train.eval_lengths: %d is listed twice", l)
		case err != nil:
			return errors.Wrapf(err, "train.eval_lengths: %d", l)
		}
		seen[l] = true
		if limit := c.Model.MaxLength(); limit > 0 && task.SeqLen() > limit {
			return errors.Errorf("train.eval_lengths: %d needs %d positions, beyond the %d of the learned position table (model.position = learned); sinusoidal, rope, alibi and none have no limit",
				l, task.SeqLen(), limit)
		}
	}
	return nil
}

// EvalLengthTasks are the tasks of train.eval_lengths, in order.
func (c Config) EvalLengthTasks() ([]data.Task, error) {
	var tasks []data.Task
	for _, l := range c.Train.EvalLengths {
		task, err := data.AtLength(c.Task, l)
		if err != nil {
			return nil, errors.Wrapf(err, "train.eval_lengths: %d", l)
		}
		tasks = append(tasks, task)
	}
	return tasks, nil
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
	if t.Steps > MaxSteps {
		return errors.Errorf("train.steps = %d: must be at most %d", t.Steps, MaxSteps)
	}
	if len(t.EvalLengths) > MaxEvalLengths {
		return errors.Errorf("train.eval_lengths: %d lengths, at most %d", len(t.EvalLengths), MaxEvalLengths)
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
	case t.Probes != "" && t.Probes != ProbesOn && t.Probes != ProbesOff:
		return errors.Errorf("train.probes = %s: must be %q or %q (default: on, off with init_from)", msg.Quote(t.Probes), ProbesOn, ProbesOff)
	case t.Moments != "" && t.Moments != MomentsFloat32 && t.Moments != MomentsFloat64:
		return errors.Errorf("train.moments = %s: must be %q or %q (default: float64, float32 with init_from)", msg.Quote(t.Moments), MomentsFloat32, MomentsFloat64)
	case t.EvalGenerate && t.EvalEvery == 0:
		return errors.New("train.eval_generate = true: needs train.eval_every > 0 (it runs at each evaluation)")
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
	return errors.Errorf("train.schedule = %s: unknown schedule (want one of: %s)%s", msg.Quote(t.Schedule), strings.Join(Schedules, ", "), msg.DidYouMean(t.Schedule, Schedules, scheduleAliases))
}

// EstimateBytes is the run's estimated memory: Memory's total (its
// training batch, and when it evaluates, EvalEvery > 0, its evaluation
// batch) plus the held-out set, which stays in memory for the whole run
// (EvalSize rows of Context positions). The config must have been resolved
// (Vocab and Context set).
func (c Config) EstimateBytes() float64 {
	est := c.Memory().Total() + c.heldOutBytes()
	if c.FineTunes() {
		return est
	}
	for _, l := range c.Train.EvalLengths {
		// Each eval length adds a forward graph and a held-out set at its
		// sequence length (counting the weights again: an over-estimate).
		if task, err := data.AtLength(c.Task, l); err == nil {
			at := c.Model
			at.Context = task.SeqLen()
			est += at.EstimateBytes(0, c.evalBatch(at.Context)) + float64(c.Train.EvalSize)*float64(at.Context)*data.BytesPerPosition
		}
	}
	return est
}

// Memory is where the run's training and evaluation graphs, weights,
// gradients and Adam moments put their memory (model.Config.TrainMemory),
// without the held-out set. A fine-tuning run's graphs read windows of
// task.length tokens, not the model's whole context: its activations are
// counted at that length, its weights whole.
func (c Config) Memory() model.TrainMemory {
	at := c.Model
	if c.FineTunes() {
		at.Context = c.Task.Length
	}
	mem := at.TrainMemory(c.Train.BatchSize, c.evalBatch(at.Context), c.MomentBytes())
	whole := c.Model.TrainMemory(0, 0, c.MomentBytes())
	mem.Weights, mem.Moments = whole.Weights, whole.Moments
	mem.Gradients = whole.Weights * float64(mem.Replicas)
	return mem
}

// heldOutBytes is the memory of the held-out set (data.EvalSet).
func (c Config) heldOutBytes() float64 {
	if c.Train.EvalEvery == 0 {
		return 0
	}
	return float64(c.Train.EvalSize) * float64(c.evalLength()) * data.BytesPerPosition
}

// evalLength is the positions of a held-out sequence: the model's context,
// or a fine-tuning run's windows of task.length.
func (c Config) evalLength() int {
	if c.FineTunes() {
		return c.Task.Length
	}
	return c.Model.Context
}

// evalBatch is the batch of the evaluation graph of sequences of seqLen
// positions, 0 when the run does not evaluate.
func (c Config) evalBatch(seqLen int) int {
	if c.Train.EvalEvery == 0 {
		return 0
	}
	return model.EvalBatch(c.Train.EvalSize, seqLen)
}

// YAML renders the resolved config; LoadRunConfig reads it back to an equal
// Config. The derived sizes appear in a leading comment, not as keys.
func (c Config) YAML() ([]byte, error) {
	var out bytes.Buffer
	from := "the task"
	if c.FineTunes() {
		from = "the pretrained model"
	}
	fmt.Fprintf(&out, "# attnscope run config (resolved); from %s: model vocab = %d, context = %d\n", from, c.Model.Vocab, c.Model.Context)
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

// modelSizeKeys explains the model keys that Resolve fills, for the error a
// file setting them gets.
var modelSizeKeys = map[string]string{
	"model.vocab":   "it comes from the task (task.symbols, plus the separator for copy, reverse and sort)",
	"model.context": "it is the task's sequence length (task.length, doubled for copy, reverse and sort)",
}

// derivedKeys are the keys a config file given to train may not set:
// modelSizeKeys, and the text task's record of its file, which only a run's
// own config file holds.
var derivedKeys = map[string]string{
	"model.vocab":   modelSizeKeys["model.vocab"],
	"model.context": modelSizeKeys["model.context"],
	"task.file":     "train records the text file there (its absolute path, size and SHA-256) when the run starts",
	"task.chars":    "train records the text's characters there when the run starts",
	"init":          "train records the pretrained model of init_from there (its path and the SHA-256 of every file read) when the run starts",
}
