package train

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// runState is everything a run carries from one step to the next besides the
// weights: the optimizer and the best evaluation so far (which decides when
// best.safetensors is rewritten). checkpoint.OptimizerState is its file.
type runState struct {
	Adam     *Adam
	BestLoss float64 // +Inf before the first evaluation
	BestStep int     // 0 before the first evaluation
}

// stageState writes the state of step beside its place in dir, synced, for
// the caller to commit (checkpoint.OptimizerState.Stage), with the digest of
// m's weights (model.WeightsDigest): the weights the checkpoint of that step
// holds.
func stageState(dir string, step int, st runState, m *model.Model) (*safefile.Staged, error) {
	digest, err := model.WeightsDigest(m)
	if err != nil {
		return nil, errors.Wrap(err, "saving the optimizer state")
	}
	file := checkpoint.OptimizerState{
		Step: step, AdamStep: st.Adam.Step, BestLoss: st.BestLoss, BestStep: st.BestStep,
		M: st.Adam.M, V: st.Adam.V, WeightsDigest: digest,
	}
	return file.Stage(dir, m.Params)
}

// loadState reads the state file of step from dir into st.Adam (which must
// have been made for m's parameters: the file's moments replace its own)
// and returns the rest of the state in st. The file must belong to m's
// weights, the checkpoint's, and hold moments of dtype moments, or either
// dtype for the zero Dtype (checkpoint.ReadOptimizerState).
func loadState(dir string, step int, st *runState, m *model.Model, moments tensor.Dtype) error {
	digest, err := model.WeightsDigest(m)
	if err != nil {
		return err
	}
	file, err := checkpoint.ReadOptimizerState(dir, step, m.Params, digest, moments)
	if err != nil {
		return err
	}
	st.Adam.M, st.Adam.V, st.Adam.Step = file.M, file.V, file.AdamStep
	st.BestLoss, st.BestStep = file.BestLoss, file.BestStep
	return nil
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
