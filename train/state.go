package train

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
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

// stateFormat is the "format" metadata of an optimizer state file.
const stateFormat = "attnscope-train-state/1"

// runState is everything a run carries from one step to the next besides the
// weights: the optimizer and the best evaluation so far (which decides when
// best.safetensors is rewritten). Batches and dropout masks are derived from
// (seed, step), so there is no RNG state to keep.
type runState struct {
	Adam     *Adam
	BestLoss float64 // +Inf before the first evaluation
	BestStep int     // 0 before the first evaluation
}

// stateFile is the name of the optimizer state saved with the checkpoint of
// step. The step in the name is what pairs the two files: a run writes
// state-<step> before checkpoint.safetensors of that step and deletes older
// state files only afterwards, so whatever moment a run is killed at, the
// state file of the checkpoint's step exists.
func stateFile(step int) string { return rundir.StateFile(step) }

// saveState writes the state of step into dir (atomically), with the digest
// of m's weights (model.WeightsDigest): the weights the checkpoint of that
// step holds.
func saveState(dir string, step int, st runState, m *model.Model) error {
	params := m.Params
	var tensors []safetensors.Tensor
	for _, moment := range []struct {
		prefix string
		values [][]float64
	}{{"adam.m.", st.Adam.M}, {"adam.v.", st.Adam.V}} {
		for i, p := range params {
			tensors = append(tensors, safetensors.Tensor{
				Name:  moment.prefix + p.Name,
				DType: safetensors.F64,
				Shape: p.Value.Shape().Clone(),
				Data:  safetensors.EncodeFloat64(moment.values[i]),
			})
		}
	}
	digest, err := model.WeightsDigest(m)
	if err != nil {
		return errors.Wrap(err, "saving the optimizer state")
	}
	meta := map[string]string{
		"weights_sha256": digest,
		"format":         stateFormat,
		"step":           strconv.Itoa(step),
		"adam_step":      strconv.Itoa(st.Adam.Step),
		"best_eval_loss": strconv.FormatFloat(st.BestLoss, 'g', -1, 64),
		"best_step":      strconv.Itoa(st.BestStep),
	}
	meta[metaDigestKey] = metaDigest(meta)
	path := filepath.Join(dir, stateFile(step))
	return safefile.WriteFileAtomic(path, func(w io.Writer) error {
		return safetensors.Write(w, tensors, meta)
	})
}

// metaDigestKey names the metadata entry that binds the others (steps, best
// loss, the weights' digest): metaDigest of them.
const metaDigestKey = "meta_sha256"

// metaDigest is the SHA-256 of every metadata entry but metaDigestKey, in
// key order, as hex.
func metaDigest(meta map[string]string) string {
	keys := make([]string, 0, len(meta))
	for k := range meta {
		if k != metaDigestKey {
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

// loadState reads the state file of step from dir into st.Adam (which must
// have been made for m's parameters) and returns the rest of the state. Every
// tensor of m must be present with its shape, and nothing else, and the
// state's weights digest must be that of m, the checkpoint's weights: a state
// of another run at the same step would otherwise be taken for this one's.
func loadState(dir string, step int, st *runState, m *model.Model) error {
	params := m.Params
	path := filepath.Join(dir, stateFile(step))
	tensors, meta, err := safetensors.ReadFileLimit(path, maxStateBytes(params))
	if errors.Is(err, os.ErrNotExist) {
		return errors.Errorf("%s is missing: the checkpoint of step %d has no optimizer state beside it", path, step)
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return errors.Wrapf(err, "safetensors file %s", path)
	}
	if meta["format"] != stateFormat {
		return errors.Errorf("%s: format %q, want %q", path, meta["format"], stateFormat)
	}
	if got := meta[metaDigestKey]; got != metaDigest(meta) {
		return errors.Errorf("%s: its metadata (steps, best loss) does not match its %s: the file was edited, or written by an older attnscope", path, metaDigestKey)
	}
	ints := map[string]int{}
	for _, key := range []string{"step", "adam_step", "best_step"} {
		v, err := strconv.Atoi(meta[key])
		if err != nil || v < 0 {
			return errors.Errorf("%s: metadata %s = %q is not a step number", path, key, meta[key])
		}
		ints[key] = v
	}
	if ints["step"] != step {
		return errors.Errorf("%s holds the state of step %d, not %d", path, ints["step"], step)
	}
	best, err := strconv.ParseFloat(meta["best_eval_loss"], 64)
	if err != nil || math.IsNaN(best) {
		return errors.Errorf("%s: metadata best_eval_loss = %q is not a loss", path, meta["best_eval_loss"])
	}
	// What the run implies: one Adam update a step, a best evaluation no
	// later than now, and a best loss that is a loss (+Inf before any
	// evaluation).
	switch {
	case ints["adam_step"] != step:
		return errors.Errorf("%s: metadata adam_step = %d, but the run is at step %d (one update a step)", path, ints["adam_step"], step)
	case ints["best_step"] > step:
		return errors.Errorf("%s: metadata best_step = %d is after the run's step %d", path, ints["best_step"], step)
	case best < 0 || math.IsInf(best, 1) && ints["best_step"] != 0:
		return errors.Errorf("%s: metadata best_eval_loss = %v is not the loss of an evaluation (a cross-entropy is at least 0)", path, best)
	}
	byName := map[string]safetensors.Tensor{}
	for _, t := range tensors {
		byName[t.Name] = t
	}
	if len(byName) != 2*len(params) {
		return errors.Errorf("%s holds %d tensors, want %d (Adam m and v of each of %d parameters)", path, len(byName), 2*len(params), len(params))
	}
	for _, moment := range []struct {
		prefix string
		values [][]float64
		second bool
	}{{"adam.m.", st.Adam.M, false}, {"adam.v.", st.Adam.V, true}} {
		for i, p := range params {
			name := moment.prefix + p.Name
			t, ok := byName[name]
			if !ok {
				return errors.Errorf("%s has no tensor %s", path, name)
			}
			if t.DType != safetensors.F64 || !p.Value.Shape().Eq(tensor.Shape(t.Shape)) {
				return errors.Errorf("%s: %s is %s %v, want F64 %v", path, name, t.DType, t.Shape, p.Value.Shape())
			}
			values, err := safetensors.DecodeFloat64(t.Data)
			if err != nil {
				return errors.Wrapf(err, "%s: %s", path, name)
			}
			// Adam would turn a non-finite moment (or a negative second
			// moment, under its square root) into NaN weights a step later,
			// and the run would blame the training instead of this file.
			for j, v := range values {
				if math.IsNaN(v) || math.IsInf(v, 0) || (moment.second && v < 0) {
					return errors.Errorf("%s: %s holds %v at flat index %d; the optimizer state is corrupt", path, name, v, j)
				}
			}
			copy(moment.values[i], values)
		}
	}
	digest, err := model.WeightsDigest(m)
	if err != nil {
		return err
	}
	if got, ok := meta["weights_sha256"]; !ok {
		return errors.Errorf("%s has no weights_sha256 metadata, so it cannot be matched to %s (written by another program or an older attnscope)", path, rundir.CheckpointFile)
	} else if got != digest {
		return errors.Errorf("%s is not the optimizer state of %s: it was saved with other weights (weights_sha256 %s, the checkpoint's %s)", path, rundir.CheckpointFile, msg.Quote(got), digest)
	}
	st.Adam.Step = ints["adam_step"]
	st.BestLoss, st.BestStep = best, ints["best_step"]
	return nil
}

// maxStateBytes bounds the state file of params: two float64 moments per
// weight, and a header of at most 1 MiB (names, shapes, offsets and five
// metadata values take a few hundred bytes per parameter). A larger file is
// refused before it is read.
func maxStateBytes(params []model.Param) int64 {
	n := int64(0)
	for _, p := range params {
		n += int64(p.Value.Shape().TotalSize())
	}
	return 8 + 1<<20 + 16*n
}

// removeStates deletes the state files whose step drop selects.
func removeStates(dir string, drop func(step int) bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return errors.Wrap(err, "listing the run directory")
	}
	for _, e := range entries {
		m := rundir.StatePattern.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		if s, err := strconv.Atoi(m[1]); err == nil && drop(s) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return errors.Wrap(err, "removing an old optimizer state")
			}
		}
	}
	return nil
}

// removeTemporaries deletes leftovers of interrupted atomic writes.
func removeTemporaries(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return errors.Wrap(err, "listing the run directory")
	}
	for _, e := range entries {
		if rundir.TemporaryPattern.MatchString(e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return errors.Wrap(err, "removing a temporary file")
			}
		}
	}
	return nil
}
