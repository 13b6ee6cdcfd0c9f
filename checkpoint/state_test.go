package checkpoint

import (
	"cmp"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/msg/msgtest"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// stParams are the parameters of the state tests: a matrix and a vector.
func stParams() []model.Param {
	return []model.Param{
		{Name: "w", Value: ckDense(tensor.Float32, []int{2, 3}, []float64{1, 2, 3, 4, 5, 6})},
		{Name: "b", Value: ckDense(tensor.Float32, []int{3}, []float64{1, 2, 3})},
	}
}

// stState is a state of step 7 for stParams, with float64 moments float32
// could not hold, or float32 moments (dtype).
func stState(dtype tensor.Dtype) *OptimizerState {
	s := &OptimizerState{Step: 7, AdamStep: 7, BestLoss: 0.1234567890123, BestStep: 5, WeightsDigest: "d1"}
	for i, shape := range [][]int{{2, 3}, {3}} {
		var m, v []float64
		for j := range tensor.Shape(shape).TotalSize() {
			m = append(m, 1.0/3+float64(i*10+j)*1e-17)
			v = append(v, math.Pi*1e-300*float64(j+1))
		}
		if dtype == tensor.Float32 {
			v = []float64{1e-30, 3e-30, 7e-30, 1, 2, 3}[:len(m)]
		}
		s.M, s.V = append(s.M, ckDense(dtype, shape, m)), append(s.V, ckDense(dtype, shape, v))
	}
	return s
}

// TestOptimizerStateRoundTrip: what Write saves, ReadOptimizerState reads
// back bit for bit, with moments of both dtypes, asked for or taken from
// the file, also before any evaluation (best loss +Inf).
func TestOptimizerStateRoundTrip(t *testing.T) {
	for _, dtype := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for _, best := range []float64{0.1234567890123, math.Inf(1)} {
			dir := t.TempDir()
			want := stState(dtype)
			want.BestLoss = best
			if math.IsInf(best, 1) {
				want.BestStep = 0
			}
			if err := writeState(want, dir, stParams()); err != nil {
				t.Fatal(err)
			}
			for _, asked := range []tensor.Dtype{dtype, {}} { // {}: the file's
				got, err := ReadOptimizerState(dir, 7, stParams(), "d1", asked)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%v moments read as %v, best %v: read %+v, wrote %+v", dtype, asked, best, got, want)
				}
			}
		}
	}
}

// TestOptimizerStateRefused: a state file a run cannot have written, or
// that belongs to other weights or another step, is refused naming the
// file and the fault, whether saved so or edited afterwards.
func TestOptimizerStateRefused(t *testing.T) {
	other := []model.Param{stParams()[0], {Name: "b", Value: ckDense(tensor.Float32, []int{4}, []float64{1, 2, 3, 4})}}
	for _, c := range []struct {
		name    string
		edit    func(s *OptimizerState)      // the state as written
		file    func(t *testing.T, p string) // then the file
		step    int                          // read at this step; 0: 7
		params  []model.Param                // read for these; nil: stParams
		digest  string                       // read for these weights; "": d1
		moments tensor.Dtype                 // read as these moments; nil: float64
		want    string
	}{
		{name: "missing", step: 8, want: "state-8.safetensors is missing: the checkpoint of step 8 has no optimizer state beside it"},
		{name: "other shapes", params: other, want: "state-7.safetensors: adam.m.b is F64 [3], want F64 (4) (train.moments float64)"},
		{name: "other dtype", moments: tensor.Float32, want: "state-7.safetensors: adam.m.w is F64 [2 3], want F32 (2, 3) (train.moments float32)"},
		{name: "other weights", digest: "d2", want: "state-7.safetensors is not the optimizer state of checkpoint.safetensors: it was saved with other weights (weights_sha256 \"d1\", the checkpoint's d2)"},
		{name: "no weights digest", edit: func(s *OptimizerState) { s.WeightsDigest = "" }, want: "has no weights_sha256 metadata"},
		{name: "renamed", file: func(t *testing.T, p string) { stRename(t, p, rundir.StateFile(10)) }, step: 10, want: "state-10.safetensors: holds the state of step 7, not 10"},
		{name: "adam step 1", edit: func(s *OptimizerState) { s.AdamStep = 1 }, want: "metadata adam_step = 1, but the run is at step 7"},
		{name: "adam step 2^63-1", edit: func(s *OptimizerState) { s.AdamStep = math.MaxInt64 }, want: "metadata adam_step = 9223372036854775807"},
		{name: "best step ahead", edit: func(s *OptimizerState) { s.BestStep = 999999 }, want: "metadata best_step = 999999 is after the run's step 7"},
		{name: "negative best loss", edit: func(s *OptimizerState) { s.BestLoss = -1 }, want: "best_eval_loss = -1 is not the loss of an evaluation"},
		{name: "-Inf best loss", edit: func(s *OptimizerState) { s.BestLoss = math.Inf(-1) }, want: "best_eval_loss = -Inf is not the loss of an evaluation"},
		{name: "NaN moment", edit: func(s *OptimizerState) { s.M[1].Float64s()[2] = math.NaN() }, want: "state-7.safetensors: adam.m.b holds NaN at flat index 2; the optimizer state is corrupt"},
		{name: "negative second moment", edit: func(s *OptimizerState) { s.V[0].Float64s()[0] = -1 }, want: "state-7.safetensors: adam.v.w holds -1 at flat index 0; the optimizer state is corrupt"},
		{name: "metadata edited", file: func(t *testing.T, p string) { stReplace(t, p, `"best_step":"5"`, `"best_step":"4"`) }, want: "state-7.safetensors: its metadata (steps, best loss) does not match its meta_sha256"},
	} {
		dir := t.TempDir()
		s := stState(tensor.Float64)
		if c.edit != nil {
			c.edit(s)
		}
		if err := writeState(s, dir, stParams()); err != nil {
			t.Fatal(err)
		}
		if c.file != nil {
			c.file(t, filepath.Join(dir, rundir.StateFile(7)))
		}
		step, params, digest := cmp.Or(c.step, 7), c.params, cmp.Or(c.digest, "d1")
		if params == nil {
			params = stParams()
		}
		moments := c.moments
		if moments == (tensor.Dtype{}) {
			moments = tensor.Float64
		}
		_, err := ReadOptimizerState(dir, step, params, digest, moments)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", c.name, err, c.want)
		}
	}
}

// stRename renames the file at path to name, in its directory.
func stRename(t *testing.T, path, name string) {
	t.Helper()
	if err := os.Rename(path, filepath.Join(filepath.Dir(path), name)); err != nil {
		t.Fatal(err)
	}
}

// stReplace replaces old with new once in the file at path.
func stReplace(t *testing.T, path, old, new string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(raw), old, new, 1)
	if edited == string(raw) {
		t.Fatalf("%s holds no %s", path, old)
	}
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeState stages s in dir and commits it.
func writeState(s *OptimizerState, dir string, params []model.Param) error {
	staged, err := s.Stage(dir, params)
	if err != nil {
		return err
	}
	return staged.Commit()
}

// TestOptimizerStateMixedDtypesRefused: a state whose moments are not all of
// one dtype is refused, also when the reader takes the dtype from the file.
func TestOptimizerStateMixedDtypesRefused(t *testing.T) {
	dir := t.TempDir()
	s := stState(tensor.Float32)
	s.V = stState(tensor.Float64).V
	if err := writeState(s, dir, stParams()); err != nil {
		t.Fatal(err)
	}
	_, err := ReadOptimizerState(dir, 7, stParams(), "d1", tensor.Dtype{})
	msgtest.Refusal(t, "mixed dtypes", err, "state-7.safetensors: adam.v.w is F64 [2 3], want F32 (2, 3) (the file's first tensor)")
}
