package train

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/model"
)

// TestStateRoundTrip saves Adam moments (with values float32 could not hold)
// and the best-eval bookkeeping, loads them into a fresh optimizer and
// requires bit-equality; then checks the refusals.
func TestStateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	params := []model.Param{
		{Name: "w", Value: denseOf(tensor.Float32, []int{2, 3}, []float64{1, 2, 3, 4, 5, 6})},
		{Name: "b", Value: denseOf(tensor.Float32, []int{3}, []float64{1, 2, 3})},
	}
	m := &model.Model{Dtype: tensor.Float32, Params: params}
	adam := NewAdam(params, 0.9, 0.999, 1e-8, 0)
	for i := range adam.M {
		for j := range adam.M[i] {
			adam.M[i][j] = 1.0/3 + float64(i*10+j)*1e-17
			adam.V[i][j] = math.Pi * 1e-300 * float64(j+1)
		}
	}
	adam.Step = 7
	if err := saveState(dir, 7, runState{Adam: adam, BestLoss: 0.1234567890123, BestStep: 5}, m); err != nil {
		t.Fatal(err)
	}
	fresh := runState{Adam: NewAdam(params, 0.9, 0.999, 1e-8, 0)}
	if err := loadState(dir, 7, &fresh, m); err != nil {
		t.Fatal(err)
	}
	if fresh.Adam.Step != 7 || fresh.BestLoss != 0.1234567890123 || fresh.BestStep != 5 {
		t.Fatalf("loaded step %d best %v at %d", fresh.Adam.Step, fresh.BestLoss, fresh.BestStep)
	}
	for i := range adam.M {
		for j := range adam.M[i] {
			if fresh.Adam.M[i][j] != adam.M[i][j] || fresh.Adam.V[i][j] != adam.V[i][j] {
				t.Fatalf("moment %d[%d] differs after the round trip", i, j)
			}
		}
	}
	inf := runState{Adam: NewAdam(params, 0.9, 0.999, 1e-8, 0), BestLoss: math.Inf(1)}
	inf.Adam.Step = 9
	if err := saveState(dir, 9, inf, m); err != nil {
		t.Fatal(err)
	}
	if err := loadState(dir, 9, &fresh, m); err != nil || !math.IsInf(fresh.BestLoss, 1) {
		t.Fatalf("state with no evaluation yet: %v, best %v", err, fresh.BestLoss)
	}

	if err := loadState(dir, 8, &fresh, m); err == nil || !strings.Contains(err.Error(), "state-8.safetensors is missing") {
		t.Errorf("missing state file: %v", err)
	}
	other := []model.Param{params[0], {Name: "b", Value: denseOf(tensor.Float32, []int{4}, []float64{1, 2, 3, 4})}}
	if err := loadState(dir, 7, &runState{Adam: NewAdam(other, 0.9, 0.999, 1e-8, 0)}, &model.Model{Dtype: tensor.Float32, Params: other}); err == nil || !strings.Contains(err.Error(), "adam.m.b") {
		t.Errorf("shape mismatch: %v", err)
	}
	// The same shapes with other weights: the state is another run's
	// (issue 11: it was accepted on resume).
	moved := []model.Param{params[0], {Name: "b", Value: denseOf(tensor.Float32, []int{3}, []float64{1, 2, 3.5})}}
	err := loadState(dir, 7, &runState{Adam: NewAdam(moved, 0.9, 0.999, 1e-8, 0)}, &model.Model{Dtype: tensor.Float32, Params: moved})
	if want := "state-7.safetensors is not the optimizer state of checkpoint.safetensors: it was saved with other weights"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("state of other weights: %v, want %s", err, want)
	}
	if err := os.Rename(filepath.Join(dir, stateFile(9)), filepath.Join(dir, stateFile(10))); err != nil {
		t.Fatal(err)
	}
	if err := loadState(dir, 10, &fresh, m); err == nil || !strings.Contains(err.Error(), "step 9, not 10") {
		t.Errorf("renamed state file: %v", err)
	}

	if err := removeStates(dir, func(s int) bool { return s < 10 }); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != stateFile(10) {
		t.Errorf("after removing states before 10: %v", entries)
	}
}

// TestStateMetadataChecked: optimizer-state metadata a run cannot have
// written is refused on load, whether saved so (an Adam step other than the
// run's, a best step in the future, a negative or -Inf best loss) or edited
// in the file afterwards (the metadata digest no longer matches).
func TestStateMetadataChecked(t *testing.T) {
	params := []model.Param{{Name: "w", Value: denseOf(tensor.Float32, []int{2}, []float64{1, 2})}}
	m := &model.Model{Dtype: tensor.Float32, Params: params}
	for _, c := range []struct {
		name     string
		adamStep int
		best     float64
		bestStep int
		want     string
	}{
		{"adam step 1", 1, 0.5, 3, "metadata adam_step = 1, but the run is at step 5"},
		{"adam step 2^63-1", math.MaxInt64, 0.5, 3, "metadata adam_step = 9223372036854775807"},
		{"best step ahead", 5, 0.5, 999999, "metadata best_step = 999999 is after the run's step 5"},
		{"negative best loss", 5, -1, 3, "best_eval_loss = -1 is not the loss of an evaluation"},
		{"-Inf best loss", 5, math.Inf(-1), 3, "best_eval_loss = -Inf is not the loss of an evaluation"},
	} {
		dir := t.TempDir()
		adam := NewAdam(params, 0.9, 0.999, 1e-8, 0)
		adam.Step = c.adamStep
		if err := saveState(dir, 5, runState{Adam: adam, BestLoss: c.best, BestStep: c.bestStep}, m); err != nil {
			t.Fatal(err)
		}
		err := loadState(dir, 5, &runState{Adam: NewAdam(params, 0.9, 0.999, 1e-8, 0)}, m)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// A valid state whose metadata is edited in the file.
	dir := t.TempDir()
	adam := NewAdam(params, 0.9, 0.999, 1e-8, 0)
	adam.Step = 5
	if err := saveState(dir, 5, runState{Adam: adam, BestLoss: 0.5, BestStep: 5}, m); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, stateFile(5))
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(raw), `"best_step":"5"`, `"best_step":"4"`, 1)
	if edited == string(raw) {
		t.Fatal("the state's header has no best_step to edit")
	}
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	err = loadState(dir, 5, &runState{Adam: NewAdam(params, 0.9, 0.999, 1e-8, 0)}, m)
	if err == nil || !strings.Contains(err.Error(), "does not match its meta_sha256") {
		t.Errorf("edited metadata: %v", err)
	}
}
