package checkpoint_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/tooltest"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// TestReadSafetensorsWithoutTorch: python/attnscope_torch.py imports and
// its read_safetensors and param_order run on a Python where `import torch`
// fails (a meta path finder refuses it): they read a checkpoint's tensors
// exactly, the values Save wrote, with its metadata, and torch
// is never imported.
func TestReadSafetensorsWithoutTorch(t *testing.T) {
	if _, err := exec.LookPath(tooltest.Python); err != nil {
		t.Skipf("no %s", tooltest.Python)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cfg := model.Config{Vocab: 7, Context: 5, DModel: 8, Heads: 2, Layers: 1}
	m, err := model.New(cfg, tensor.Float32, 3)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "checkpoint.safetensors")
	run := rundir.DefaultConfig()
	run.Task, run.Model = data.TaskConfig{Name: "repeat", Length: cfg.Context, Symbols: cfg.Vocab}, cfg
	if err := checkpoint.Save(path, m, run, 4); err != nil {
		t.Fatal(err)
	}
	script := `
import importlib.abc, json, sys
class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is blocked by the test")
        return None
sys.meta_path.insert(0, NoTorch())
sys.path.insert(0, sys.argv[1])
import attnscope_torch
tensors, metadata = attnscope_torch.read_safetensors(sys.argv[2])
cfg = json.loads(metadata["config"])["model"]
print(json.dumps({"step": metadata["step"], "order": attnscope_torch.param_order(cfg),
                  "tensors": {k: {"dtype": a.dtype, "shape": a.shape, "values": a.values.tolist()} for k, a in tensors.items()},
                  "torch": "torch" in sys.modules}))
`
	raw, err := exec.Command(tooltest.Python, "-c", script, filepath.Join(root, "python"), path).Output()
	if err != nil {
		t.Fatalf("python without torch: %v\n%s", err, errText(err))
	}
	var got struct {
		Step    string
		Order   []string
		Tensors map[string]struct {
			Dtype  string
			Shape  []int
			Values []float64
		}
		Torch bool
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("python printed %q: %v", raw, err)
	}
	if got.Torch || got.Step != "4" || len(got.Tensors) != len(m.Params) || len(got.Order) != len(m.Params) {
		t.Fatalf("torch imported %v, step %q, %d tensors and %d names; want no torch, step 4, %d of each",
			got.Torch, got.Step, len(got.Tensors), len(got.Order), len(m.Params))
	}
	for i, p := range m.Params {
		a, ok := got.Tensors[p.Name]
		if !ok || got.Order[i] != p.Name || a.Dtype != "F32" || !slices.Equal(a.Shape, []int(p.Value.Shape())) {
			t.Errorf("%s: read %+v as name %d %q; want F32 of shape %v", p.Name, a.Shape, i, got.Order[i], p.Value.Shape())
			continue
		}
		for j, v := range p.Value.Float32s() {
			if a.Values[j] != float64(v) {
				t.Errorf("%s[%d] = %v, want %v", p.Name, j, a.Values[j], v)
				break
			}
		}
	}
}
