package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// StateFormat is the "format" metadata of an optimizer state file.
const StateFormat = "attnscope-train-state/1"

// Metadata keys of an optimizer state file.
const (
	stateWeights  = "weights_sha256"
	stateStep     = "step"
	stateAdamStep = "adam_step"
	stateBestLoss = "best_eval_loss"
	stateBestStep = "best_step"
	// stateDigest names the entry that binds the others (steps, best loss,
	// the weights' digest): metaDigest of them.
	stateDigest = "meta_sha256"
)

// OptimizerState is what a run carries from one step to the next besides the
// weights, as rundir.StateFile(Step) holds it: tensors adam.m.<name> and
// adam.v.<name> for each parameter, F64 or F32 as the run keeps its moments
// (train.moments), and the other fields as metadata.
// Batches and dropout masks are derived from (seed, step), so there is no
// RNG state to keep.
type OptimizerState struct {
	Step     int     // the step of the checkpoint it belongs to
	AdamStep int     // Adam updates applied: one a step
	BestLoss float64 // the lowest eval_loss so far; +Inf before the first evaluation
	BestStep int     // the step of BestLoss; 0 before the first evaluation
	// M and V are Adam's first and second moments, one tensor per parameter
	// of its shape, all float64 or all float32.
	M, V []*tensor.Dense
	// WeightsDigest is model.WeightsDigest of the weights the checkpoint of
	// Step holds: the digest that pairs the two files.
	WeightsDigest string
}

// Stage writes s, synced, beside its place in dir, rundir.StateFile(s.Step),
// but not yet there (safefile.Stage): the caller commits it. params (the
// model's, in order) name and shape the moments.
func (s *OptimizerState) Stage(dir string, params []model.Param) (*safefile.Staged, error) {
	var streams []safetensors.Stream
	for _, moment := range s.moments() {
		if len(moment.values) != len(params) {
			return nil, errors.Errorf("saving the optimizer state: %d %s moments for %d parameters", len(moment.values), moment.prefix, len(params))
		}
		for i, p := range params {
			values := moment.values[i]
			if !values.Shape().Eq(p.Value.Shape()) {
				return nil, errors.Errorf("saving the optimizer state: %s%s has shape %v, the parameter %v", moment.prefix, p.Name, values.Shape(), p.Value.Shape())
			}
			stream := safetensors.Stream{Name: moment.prefix + p.Name, Shape: p.Value.Shape().Clone()}
			switch values.Dtype() {
			case tensor.Float32:
				stream.DType, stream.Encode = safetensors.F32, safetensors.Float32Encoder(values.Float32s(), nil)
			case tensor.Float64:
				stream.DType, stream.Encode = safetensors.F64, safetensors.Float64Encoder(values.Float64s(), nil)
			default:
				return nil, errors.Errorf("saving the optimizer state: %s%s is %v, want float32 or float64", moment.prefix, p.Name, values.Dtype())
			}
			streams = append(streams, stream)
		}
	}
	meta := map[string]string{
		stateWeights:  s.WeightsDigest,
		metaFormat:    StateFormat,
		stateStep:     strconv.Itoa(s.Step),
		stateAdamStep: strconv.Itoa(s.AdamStep),
		stateBestLoss: strconv.FormatFloat(s.BestLoss, 'g', -1, 64),
		stateBestStep: strconv.Itoa(s.BestStep),
	}
	meta[stateDigest] = metaDigest(meta)
	return safefile.Stage(filepath.Join(dir, rundir.StateFile(s.Step)), func(w safefile.Writer) error {
		return safetensors.WriteSealed(w, streams, meta)
	})
}

// moment is one of Adam's moments as the state file names its tensors.
type moment struct {
	prefix string
	values []*tensor.Dense
	second bool // never negative
}

func (s *OptimizerState) moments() []moment {
	return []moment{{"adam.m.", s.M, false}, {"adam.v.", s.V, true}}
}

// metaDigest is the SHA-256 of every metadata entry but stateDigest, in
// key order, as hex.
func metaDigest(meta map[string]string) string {
	keys := make([]string, 0, len(meta))
	for k := range meta {
		if k != stateDigest {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%q=%q\n", k, meta[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ReadOptimizerState reads rundir.StateFile(step) from dir for a model of
// params whose weights have the digest weightsDigest (the checkpoint's), its
// moments of dtype moments (float32 or float64, the run's; the zero Dtype
// takes the file's, either). Every parameter's moments must be present with
// its shape and that dtype, and nothing else; the metadata must be what a
// run writes (its digest intact, one Adam update a step, a best evaluation
// no later than now); and the state's weights digest must be weightsDigest:
// a state of another run at the same step would otherwise be taken for this
// one's. The header is checked before any data is read, and the moments are
// read once, straight into the tensors returned.
func ReadOptimizerState(dir string, step int, params []model.Param, weightsDigest string, moments tensor.Dtype) (*OptimizerState, error) {
	path := filepath.Join(dir, rundir.StateFile(step))
	s, err := readOptimizerState(path, step, params, moments)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errors.Errorf("%s is missing: the checkpoint of step %d has no optimizer state beside it", path, step)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case s.WeightsDigest == "":
		return nil, errors.Errorf("%s has no %s metadata, so it cannot be matched to %s (written by another program or an older attnscope)", path, stateWeights, rundir.CheckpointFile)
	case s.WeightsDigest != weightsDigest:
		return nil, errors.Errorf("%s is not the optimizer state of %s: it was saved with other weights (%s %s, the checkpoint's %s)", path, rundir.CheckpointFile, stateWeights, msg.Quote(s.WeightsDigest), weightsDigest)
	}
	return s, nil
}

// readOptimizerState is ReadOptimizerState's reading, each error naming
// the file (as a "safetensors file" when the format's layer refuses it),
// except a missing file's.
func readOptimizerState(path string, step int, params []model.Param, moments tensor.Dtype) (*OptimizerState, error) {
	f, err := safetensors.Open(path, maxStateBytes(params))
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) && !errors.Is(err, os.ErrNotExist) {
			err = pe.Err
		}
		return nil, errors.Wrapf(err, "safetensors file %s", path)
	}
	defer f.Close()
	s, err := decodeStateMeta(f.Metadata(), step)
	if err != nil {
		return nil, errors.Wrap(err, path)
	}
	byName, err := s.allocateMoments(f.Tensors(), params, moments)
	if err != nil {
		return nil, errors.Wrap(err, path)
	}
	if _, err := f.ReadAll(func(in safetensors.Info) (any, error) { return byName[in.Name].Data(), nil }); err != nil {
		return nil, errors.Wrapf(err, "safetensors file %s", path)
	}
	return s, errors.Wrap(s.checkMoments(params), path)
}

// decodeStateMeta reads the metadata of the state file of step, refusing
// what a run cannot have written.
func decodeStateMeta(meta map[string]string, step int) (*OptimizerState, error) {
	if meta[metaFormat] != StateFormat {
		return nil, errors.Errorf("format %q, want %q", meta[metaFormat], StateFormat)
	}
	if got := meta[stateDigest]; got != metaDigest(meta) {
		return nil, errors.Errorf("its metadata (steps, best loss) does not match its %s: the file was edited, or written by an older attnscope", stateDigest)
	}
	s := &OptimizerState{WeightsDigest: meta[stateWeights]}
	for _, f := range []struct {
		key string
		to  *int
	}{{stateStep, &s.Step}, {stateAdamStep, &s.AdamStep}, {stateBestStep, &s.BestStep}} {
		v, err := strconv.Atoi(meta[f.key])
		if err != nil || v < 0 {
			return nil, errors.Errorf("metadata %s = %q is not a step number", f.key, meta[f.key])
		}
		*f.to = v
	}
	if s.Step != step {
		return nil, errors.Errorf("holds the state of step %d, not %d", s.Step, step)
	}
	best, err := strconv.ParseFloat(meta[stateBestLoss], 64)
	if err != nil || math.IsNaN(best) {
		return nil, errors.Errorf("metadata %s = %q is not a loss", stateBestLoss, meta[stateBestLoss])
	}
	s.BestLoss = best
	// What the run implies: one Adam update a step, a best evaluation no
	// later than now, and a best loss that is a loss (+Inf before any
	// evaluation).
	switch {
	case s.AdamStep != step:
		return nil, errors.Errorf("metadata %s = %d, but the run is at step %d (one update a step)", stateAdamStep, s.AdamStep, step)
	case s.BestStep > step:
		return nil, errors.Errorf("metadata %s = %d is after the run's step %d", stateBestStep, s.BestStep, step)
	case best < 0 || math.IsInf(best, 1) && s.BestStep != 0:
		return nil, errors.Errorf("metadata %s = %v is not the loss of an evaluation (a cross-entropy is at least 0)", stateBestLoss, best)
	}
	return s, nil
}

// allocateMoments makes s.M and s.V for the file's tensors, which must be
// exactly the two moments of each of params, with its shape, of dtype
// moments (the zero Dtype: the dtype of the file's first tensor, F32 or
// F64); it returns them by their names in the file.
func (s *OptimizerState) allocateMoments(tensors []safetensors.Info, params []model.Param, moments tensor.Dtype) (map[string]*tensor.Dense, error) {
	if len(tensors) != 2*len(params) {
		return nil, errors.Errorf("holds %d tensors, want %d (Adam m and v of each of %d parameters)", len(tensors), 2*len(params), len(params))
	}
	// why is what the refusal of another dtype says the wanted one comes from.
	why := fmt.Sprintf("train.moments %s", moments)
	if moments == (tensor.Dtype{}) {
		moments, why = tensor.Float64, "the file's first tensor"
		if len(tensors) > 0 && tensors[0].DType == safetensors.F32 {
			moments = tensor.Float32
		}
	}
	dtype := safetensors.F64
	if moments == tensor.Float32 {
		dtype = safetensors.F32
	}
	inFile := map[string]safetensors.Info{}
	for _, t := range tensors {
		inFile[t.Name] = t
	}
	byName := map[string]*tensor.Dense{}
	s.M, s.V = make([]*tensor.Dense, len(params)), make([]*tensor.Dense, len(params))
	for _, moment := range s.moments() {
		for i, p := range params {
			name := moment.prefix + p.Name
			t, ok := inFile[name]
			if !ok {
				return nil, errors.Errorf("has no tensor %s", name)
			}
			if t.DType != dtype || !p.Value.Shape().Eq(tensor.Shape(t.Shape)) {
				return nil, errors.Errorf("%s is %s %v, want %s %v (%s)", name, t.DType, t.Shape, dtype, p.Value.Shape(), why)
			}
			moment.values[i] = tensor.New(tensor.Of(moments), tensor.WithShape(p.Value.Shape().Clone()...))
			byName[name] = moment.values[i]
		}
	}
	return byName, nil
}

// checkMoments refuses moments Adam cannot resume from: a non-finite value,
// or a negative second moment.
func (s *OptimizerState) checkMoments(params []model.Param) error {
	for _, moment := range s.moments() {
		for i, p := range params {
			// Adam would turn a non-finite moment (or a negative second
			// moment, under its square root) into NaN weights a step later,
			// and the run would blame the training instead of this file.
			if j, v, bad := firstBadMoment(moment.values[i], moment.second); bad {
				return errors.Errorf("%s%s holds %v at flat index %d; the optimizer state is corrupt", moment.prefix, p.Name, v, j)
			}
		}
	}
	return nil
}

// firstBadMoment returns the first value of t that is not finite, or
// negative when second is set.
func firstBadMoment(t *tensor.Dense, second bool) (int, float64, bool) {
	bad := func(v float64) bool { return !isFinite(v) || second && v < 0 }
	if t.Dtype() == tensor.Float32 {
		for j, v := range t.Float32s() {
			if bad(float64(v)) {
				return j, float64(v), true
			}
		}
		return 0, 0, false
	}
	for j, v := range t.Float64s() {
		if bad(v) {
			return j, v, true
		}
	}
	return 0, 0, false
}

// maxStateBytes bounds the state file of params: two float64 moments per
// weight (float32 ones take half), and a header of at most 1 MiB (names,
// shapes, offsets and five metadata values take a few hundred bytes per
// parameter). A larger file is refused before it is read.
func maxStateBytes(params []model.Param) int64 {
	n := int64(0)
	for _, p := range params {
		n += int64(p.Value.Shape().TotalSize())
	}
	return 8 + 1<<20 + 16*n
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
