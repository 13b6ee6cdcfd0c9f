package rundir

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/model"
)

// CheckpointFormat is the metadata "format" value of the checkpoints
// SaveCheckpoint writes and the only one LoadCheckpoint accepts.
const CheckpointFormat = "attnscope/1"

// Metadata keys of a checkpoint.
const (
	metaConfig = "config"
	metaStep   = "step"
	metaFormat = "format"
)

// Checkpoint is a model with the run config it was trained with and the
// step it was saved at.
type Checkpoint struct {
	Model  *model.Model
	Config Config // Config.Model equals Model.Config
	Step   int
	// Sealed says the file recorded a SHA-256 of its tensor data and the data
	// matched it; false for a file written before checkpoints recorded one
	// (a damaged one is refused).
	Sealed bool

	dtype tensor.Dtype // of the tensors, from the header
}

// SaveCheckpoint writes m as a safetensors checkpoint at path, replacing any
// file there atomically (safefile.WriteFileAtomic): its weights
// (model.Tensors) and, as metadata, cfg as JSON ("config"), the step and
// the format. cfg.Model must equal m.Config.
func SaveCheckpoint(path string, m *model.Model, cfg Config, step int) error {
	tensors, metadata, err := encodeCheckpoint(m, cfg, step)
	if err != nil {
		return errors.Wrapf(err, "save checkpoint %s", path)
	}
	return safefile.WriteFileAtomic(path, func(w io.Writer) error {
		return safetensors.Write(w, tensors, metadata)
	})
}

func encodeCheckpoint(m *model.Model, cfg Config, step int) ([]safetensors.Tensor, map[string]string, error) {
	if m == nil {
		return nil, nil, errors.New("model is nil")
	}
	if step < 0 {
		return nil, nil, errors.Errorf("step %d is negative", step)
	}
	if cfg.Model != m.Config {
		return nil, nil, errors.Errorf("run config differs from the model's own config (%s)",
			configDiff(Config{Model: cfg.Model}, Config{Model: m.Config}, "run config", "model"))
	}
	if err := cfg.ValidateModel(); err != nil {
		return nil, nil, errors.Wrap(err, "run config")
	}
	tensors, err := m.Tensors()
	if err != nil {
		return nil, nil, err
	}
	runConfig, err := json.Marshal(cfg)
	if err != nil {
		return nil, nil, errors.Wrap(err, "encoding the run config")
	}
	metadata := map[string]string{
		metaConfig: string(runConfig),
		metaStep:   strconv.Itoa(step),
		metaFormat: CheckpointFormat,
	}
	return tensors, metadata, nil
}

// MaxCheckpointLen is the largest checkpoint file LoadCheckpoint reads (4
// GiB). The largest model train accepts (MaxMemory) saves to well under 2
// GiB; the limit keeps a wrong path from being read into memory.
const MaxCheckpointLen = 4 << 30

// LoadCheckpoint reads and validates the checkpoint at path. Every check
// failure is one line naming the file and the problem. The header is read
// and checked before any tensor data: the file size (at most
// MaxCheckpointLen), the format, the step, the whole run config (parsed
// with bounds on its size and nesting, every key known and none twice,
// then ValidateModel: the model and the task, though no file the task
// names is read) and every tensor's name, dtype and shape against the
// model it describes. Only then are the tensors read, once, straight into
// the model's values, each checked finite, and the SHA-256 the file
// records of its data compared (Checkpoint.Sealed). A pipe or a device
// such as /dev/zero is refused rather than read forever.
func LoadCheckpoint(path string) (*Checkpoint, error) {
	f, ck, err := openCheckpoint(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	values := map[string]any{}
	ck.Sealed, err = f.ReadAll(func(in safetensors.Info) (any, error) {
		if ck.dtype == tensor.Float64 {
			values[in.Name] = make([]float64, in.Len())
		} else {
			values[in.Name] = make([]float32, in.Len())
		}
		return values[in.Name], nil
	})
	if err == nil {
		ck.Model, err = model.FromValues(ck.Config.Model, values)
	}
	if err != nil {
		return nil, errors.Wrapf(err, "checkpoint %s", path)
	}
	return ck, nil
}

// PeekCheckpoint reads the run config and the step of the checkpoint at
// path from its header alone, with every check LoadCheckpoint makes of the
// header (the tensors' names, dtypes and shapes among them), and no tensor
// data read.
func PeekCheckpoint(path string) (Config, int, error) {
	f, ck, err := openCheckpoint(path)
	if err != nil {
		return Config{}, 0, err
	}
	f.Close()
	return ck.Config, ck.Step, nil
}

// openCheckpoint opens the checkpoint at path and checks its header.
func openCheckpoint(path string) (*safetensors.File, *Checkpoint, error) {
	f, err := safetensors.Open(path, MaxCheckpointLen)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, nil, errors.Wrapf(err, "checkpoint %s", path)
	}
	ck := &Checkpoint{}
	if ck.Config, ck.Step, err = decodeMetadata(f.Metadata()); err == nil {
		ck.dtype, err = model.CheckTensors(ck.Config.Model, f.Tensors())
	}
	if err != nil {
		f.Close()
		return nil, nil, errors.Wrapf(err, "checkpoint %s", path)
	}
	return f, ck, nil
}

// decodeMetadata checks a checkpoint's metadata: the format, the step and
// the run config.
func decodeMetadata(metadata map[string]string) (Config, int, error) {
	format, ok := metadata[metaFormat]
	if !ok {
		return Config{}, 0, errors.Errorf("no %q metadata: not an attnscope checkpoint", metaFormat)
	}
	if format != CheckpointFormat {
		return Config{}, 0, errors.Errorf("format %s is not supported (want %q)", msg.Quote(format), CheckpointFormat)
	}
	for key := range metadata {
		if key != metaFormat && key != metaStep && key != metaConfig {
			return Config{}, 0, errors.Errorf("unexpected metadata key %s", msg.Quote(key))
		}
	}
	stepText, ok := metadata[metaStep]
	if !ok {
		return Config{}, 0, errors.Errorf("no %q metadata", metaStep)
	}
	step, err := strconv.Atoi(stepText)
	if err != nil || step < 0 || strconv.Itoa(step) != stepText {
		return Config{}, 0, errors.Errorf("metadata step %s is not a non-negative decimal integer", msg.Quote(stepText))
	}
	runConfig, ok := metadata[metaConfig]
	if !ok {
		return Config{}, 0, errors.Errorf("no %q metadata", metaConfig)
	}
	cfg, err := decodeConfigJSON([]byte(runConfig))
	if err != nil {
		return Config{}, 0, errors.Wrap(err, "metadata config")
	}
	if err := cfg.ValidateModel(); err != nil {
		return Config{}, 0, errors.Wrap(err, "metadata config")
	}
	return cfg, step, nil
}

// Bounds on a run config stored as JSON. A real one is a few kilobytes
// (a text task's characters may add a few hundred) and three levels deep.
const (
	maxConfigJSON  = 1 << 20
	maxConfigDepth = 8
)

// decodeConfigJSON decodes a run config stored as JSON over DefaultConfig
// (a key an older writer did not know keeps its default), refusing one
// longer than maxConfigJSON, nested deeper than maxConfigDepth, with a key
// twice in one object or a key Config does not have.
func decodeConfigJSON(src []byte) (Config, error) {
	if len(src) > maxConfigJSON {
		return Config{}, errors.Errorf("the run config is %d bytes, more than the %d a run config may take", len(src), maxConfigJSON)
	}
	if err := checkJSONShape(src); err != nil {
		return Config{}, errors.Wrap(err, "run config")
	}
	cfg := DefaultConfig()
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, errors.Wrapf(err, "run config %s", abbreviate(src))
	}
	if dec.More() {
		return Config{}, errors.Errorf("run config %s: more than one JSON value", abbreviate(src))
	}
	return cfg, nil
}

// checkJSONShape refuses JSON nested deeper than maxConfigDepth or with a
// key twice in one object (encoding/json would keep the last, so a
// checkpoint could say "copy" to one reader and "reverse" to another). It
// walks the tokens without recursion, and names a key's path only when it
// refuses it, so its cost is linear in the input. Invalid JSON is left for
// the decoder to report.
func checkJSONShape(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type level struct {
		object  bool
		wantKey bool   // an object's next token is a key (or its end)
		key     string // an object's current key
		seen    map[string]bool
	}
	var stack []level
	path := func() string {
		var b strings.Builder
		b.WriteString("the config")
		for _, l := range stack[:len(stack)-1] {
			if l.object {
				b.WriteString("." + l.key)
			} else {
				b.WriteString("[]")
			}
		}
		return b.String()
	}
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if n := len(stack); n > 0 && stack[n-1].wantKey && tok != json.Delim('}') {
			top := &stack[n-1]
			name, _ := tok.(string)
			if top.seen[name] {
				return errors.Errorf("key %s appears twice in %s", msg.Quote(name), path())
			}
			top.seen[name], top.key, top.wantKey = true, name, false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) == maxConfigDepth {
				return errors.Errorf("the config nests deeper than %d levels", maxConfigDepth)
			}
			open := tok == json.Delim('{')
			stack = append(stack, level{object: open, wantKey: open, seen: map[string]bool{}})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

// abbreviate shortens JSON for an error message, keeping it on one line.
func abbreviate(raw []byte) string {
	const max = 60
	s := strings.Join(strings.Fields(string(raw)), " ")
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.Quote(s)
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
