package train

import (
	"math"
	"os"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// TestStateRoundTrip saves Adam moments (with values float32 could not hold,
// in the float64 case) and the best-eval bookkeeping, loads them into a fresh
// optimizer and requires bit-equality, for moments of both dtypes, also
// before any evaluation (best loss +Inf); a state of the other dtype is
// refused naming train.moments, read in its own dtype when none is asked
// (a config without train.moments: resumedMoments), and the state of the same shapes with other
// weights is refused (issue 11: it was accepted on resume). The file
// format's own checks are package checkpoint's tests.
func TestStateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	params := []model.Param{
		{Name: "w", Value: denseOf(tensor.Float32, []int{2, 3}, []float64{1, 2, 3, 4, 5, 6})},
		{Name: "b", Value: denseOf(tensor.Float32, []int{3}, []float64{1, 2, 3})},
	}
	m := &model.Model{Dtype: tensor.Float32, Params: params}
	var fresh runState
	for _, dtype := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		adam := NewAdam(params, dtype, 0.9, 0.999, 1e-8, 0)
		for i := range adam.M {
			for j := range adam.M[i].Shape().TotalSize() {
				setValue(adam.M[i], j, 1.0/3+float64(i*10+j)*1e-17)
				setValue(adam.V[i], j, math.Pi*1e-30*float64(j+1))
			}
		}
		adam.Step = 7
		if err := saveState(dir, 7, runState{Adam: adam, BestLoss: 0.1234567890123, BestStep: 5}, m); err != nil {
			t.Fatal(err)
		}
		other := tensor.Float64
		if dtype == tensor.Float64 {
			other = tensor.Float32
		}
		err := loadState(dir, 7, &runState{Adam: NewAdam(params, other, 0.9, 0.999, 1e-8, 0)}, m, other)
		if want := "state-7.safetensors: adam.m.w is "; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "train.moments "+other.String()) {
			t.Errorf("%v moments read as %v: %v, want %s... train.moments %v", dtype, other, err, want, other)
		}
		either := runState{Adam: NewAdam(params, other, 0.9, 0.999, 1e-8, 0)}
		if err := loadState(dir, 7, &either, m, tensor.Dtype{}); err != nil || either.Adam.M[0].Dtype() != dtype || either.Adam.V[1].Dtype() != dtype {
			t.Errorf("%v moments read as the file's: %v, got %v", dtype, err, either.Adam.M[0].Dtype())
		}
		fresh = runState{Adam: NewAdam(params, dtype, 0.9, 0.999, 1e-8, 0)}
		if err := loadState(dir, 7, &fresh, m, dtype); err != nil {
			t.Fatal(err)
		}
		if fresh.Adam.Step != 7 || fresh.BestLoss != 0.1234567890123 || fresh.BestStep != 5 {
			t.Fatalf("loaded step %d best %v at %d", fresh.Adam.Step, fresh.BestLoss, fresh.BestStep)
		}
		for i := range adam.M {
			gotM, gotV, wantM, wantV := valuesOf(fresh.Adam.M[i]), valuesOf(fresh.Adam.V[i]), valuesOf(adam.M[i]), valuesOf(adam.V[i])
			for j := range wantM {
				if fresh.Adam.M[i].Dtype() != dtype || math.Float64bits(gotM[j]) != math.Float64bits(wantM[j]) || math.Float64bits(gotV[j]) != math.Float64bits(wantV[j]) {
					t.Fatalf("%v moment %d[%d] differs after the round trip", dtype, i, j)
				}
			}
		}
	}
	inf := runState{Adam: NewAdam(params, tensor.Float64, 0.9, 0.999, 1e-8, 0), BestLoss: math.Inf(1)}
	inf.Adam.Step = 9
	if err := saveState(dir, 9, inf, m); err != nil {
		t.Fatal(err)
	}
	if err := loadState(dir, 9, &fresh, m, tensor.Float64); err != nil || !math.IsInf(fresh.BestLoss, 1) || fresh.BestStep != 0 {
		t.Fatalf("state with no evaluation yet: %v, best %v at %d", err, fresh.BestLoss, fresh.BestStep)
	}
	moved := []model.Param{params[0], {Name: "b", Value: denseOf(tensor.Float32, []int{3}, []float64{1, 2, 3.5})}}
	err := loadState(dir, 7, &runState{Adam: NewAdam(moved, tensor.Float64, 0.9, 0.999, 1e-8, 0)}, &model.Model{Dtype: tensor.Float32, Params: moved}, tensor.Float64)
	if want := "state-7.safetensors is not the optimizer state of checkpoint.safetensors: it was saved with other weights"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("state of other weights: %v, want %s", err, want)
	}

	if err := removeStates(dir, func(s int) bool { return s < 9 }); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != rundir.StateFile(9) {
		t.Errorf("after removing states before 9: %v", entries)
	}
}

// setValue sets element j of a float32 or float64 tensor to x.
func setValue(t *tensor.Dense, j int, x float64) {
	if t.Dtype() == tensor.Float32 {
		t.Float32s()[j] = float32(x)
	} else {
		t.Float64s()[j] = x
	}
}

// saveState stages the state of step in dir and commits it.
func saveState(dir string, step int, st runState, m *model.Model) error {
	staged, err := stageState(dir, step, st, m)
	if err != nil {
		return err
	}
	return staged.Commit()
}
