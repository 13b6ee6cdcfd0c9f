package checkpoint

import (
	"encoding/json"
	"os"
	"strconv"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// Format is the metadata "format" value of the checkpoints
// Save writes and the only one Load accepts.
const Format = "attnscope/1"

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
	Config rundir.Config // Config.Model equals Model.Config
	Step   int
	// Sealed says the file recorded a SHA-256 of its tensor data and the data
	// matched it; false for a file written before checkpoints recorded one
	// (a damaged one is refused).
	Sealed bool

	dtype tensor.Dtype // of the tensors, from the header
}

// Save writes m as a safetensors checkpoint at path, replacing any
// file there atomically (safefile.WriteFileAtomicAt): its weights
// (model.TensorStreams) and, as metadata, cfg as JSON ("config"), the step and
// the format. cfg.Model must equal m.Config. The file is written and sealed
// in one pass (safetensors.WriteSealed).
func Save(path string, m *model.Model, cfg rundir.Config, step int) error {
	staged, err := Stage(path, m, cfg, step)
	if err != nil {
		return err
	}
	return staged.Commit()
}

// Stage writes the checkpoint Save writes, synced, beside path but not yet
// in place (safefile.Stage): the caller commits it, or first gives its
// bytes a second name (Staged.LinkAs: best.safetensors).
func Stage(path string, m *model.Model, cfg rundir.Config, step int) (*safefile.Staged, error) {
	streams, metadata, err := encodeCheckpoint(m, cfg, step)
	if err != nil {
		return nil, errors.Wrapf(err, "save checkpoint %s", path)
	}
	staged, err := safefile.Stage(path, func(w safefile.Writer) error {
		return safetensors.WriteSealed(w, streams, metadata)
	})
	var refused *model.RefusedValue
	if errors.As(err, &refused) {
		return nil, errors.Wrapf(refused, "save checkpoint %s", path)
	}
	return staged, err
}

func encodeCheckpoint(m *model.Model, cfg rundir.Config, step int) ([]safetensors.Stream, map[string]string, error) {
	if m == nil {
		return nil, nil, errors.New("model is nil")
	}
	if step < 0 {
		return nil, nil, errors.Errorf("step %d is negative", step)
	}
	if cfg.Model != m.Config {
		return nil, nil, errors.Errorf("run config differs from the model's own config (%s)",
			rundir.ConfigDiff(rundir.Config{Model: cfg.Model}, rundir.Config{Model: m.Config}, "run config", "model"))
	}
	if err := cfg.ValidateModel(); err != nil {
		return nil, nil, errors.Wrap(err, "run config")
	}
	streams, err := m.TensorStreams()
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
		metaFormat: Format,
	}
	return streams, metadata, nil
}

// MaxLen is the largest checkpoint file Load reads (4
// GiB). The largest model train accepts (MaxMemory) saves to well under 2
// GiB; the limit keeps a wrong path from being read into memory.
const MaxLen = 4 << 30

// Load reads and validates the checkpoint at path. Every check
// failure is one line naming the file and the problem. The header is read
// and checked before any tensor data: the file size (at most
// MaxLen), the format, the step, the whole run config (parsed
// with bounds on its size and nesting, every key known and none twice,
// then ValidateModel: the model and the task, though no file the task
// names is read) and every tensor's name, dtype and shape against the
// model it describes. Only then are the tensors read, once, straight into
// the model's values, each checked finite, and the SHA-256 the file
// records of its data compared (Checkpoint.Sealed). A pipe or a device
// such as /dev/zero is refused rather than read forever.
func Load(path string) (*Checkpoint, error) {
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

// Peek reads the run config and the step of the checkpoint at
// path from its header alone, with every check Load makes of the
// header (the tensors' names, dtypes and shapes among them), and no tensor
// data read.
func Peek(path string) (rundir.Config, int, error) {
	f, ck, err := openCheckpoint(path)
	if err != nil {
		return rundir.Config{}, 0, err
	}
	f.Close()
	return ck.Config, ck.Step, nil
}

// openCheckpoint opens the checkpoint at path and checks its header.
func openCheckpoint(path string) (*safetensors.File, *Checkpoint, error) {
	f, err := safetensors.Open(path, MaxLen)
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
func decodeMetadata(metadata map[string]string) (rundir.Config, int, error) {
	format, ok := metadata[metaFormat]
	if !ok {
		return rundir.Config{}, 0, errors.Errorf("no %q metadata: not an attnscope checkpoint", metaFormat)
	}
	if format != Format {
		return rundir.Config{}, 0, errors.Errorf("format %s is not supported (want %q)", msg.Quote(format), Format)
	}
	for key := range metadata {
		if key != metaFormat && key != metaStep && key != metaConfig {
			return rundir.Config{}, 0, errors.Errorf("unexpected metadata key %s", msg.Quote(key))
		}
	}
	stepText, ok := metadata[metaStep]
	if !ok {
		return rundir.Config{}, 0, errors.Errorf("no %q metadata", metaStep)
	}
	step, err := strconv.Atoi(stepText)
	if err != nil || step < 0 || strconv.Itoa(step) != stepText {
		return rundir.Config{}, 0, errors.Errorf("metadata step %s is not a non-negative decimal integer", msg.Quote(stepText))
	}
	runConfig, ok := metadata[metaConfig]
	if !ok {
		return rundir.Config{}, 0, errors.Errorf("no %q metadata", metaConfig)
	}
	cfg, err := decodeConfigJSON([]byte(runConfig))
	if err != nil {
		return rundir.Config{}, 0, errors.Wrap(err, "metadata config")
	}
	if err := cfg.ValidateModel(); err != nil {
		return rundir.Config{}, 0, errors.Wrap(err, "metadata config")
	}
	return cfg, step, nil
}
