package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/rundir"
)

// readoutModel saves a copy model of cfg's parts (with the task's vocabulary
// and context) and builds its report with the circuits.
func readoutModel(t *testing.T, cfg model.Config) *Report {
	t.Helper()
	task := data.TaskConfig{Name: "copy", Length: 4, Symbols: 5}
	cfg.Vocab, cfg.Context = 6, 8
	m, err := model.New(cfg, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	run := rundir.DefaultConfig()
	run.Task, run.Model = task, cfg
	path := filepath.Join(t.TempDir(), "checkpoint.safetensors")
	if err := checkpoint.Save(path, m, run, 1); err != nil {
		t.Fatal(err)
	}
	r, err := build(Options{Checkpoint: path, Samples: 2, Seed: 1, Circuits: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReadoutSaidWhereNotLinear: where the readout is not linear (Gemma
// 2's final soft-cap and sandwich norms, OLMo 2's post norms), the text
// view and -json (which the page shows) say what direct logit
// attribution and the logit lens do, one line each beside their numbers;
// a pre-norm model without a cap says nothing.
func TestReadoutSaidWhereNotLinear(t *testing.T) {
	base := model.Config{DModel: 8, Heads: 2, Layers: 2, MLP: true, DFF: 16, Norm: model.NormRMS, Position: model.PositionRope}
	gemma, olmo := base, base
	gemma.NormPlacement, gemma.NormOffset, gemma.FinalSoftcap = model.PlacementSandwich, true, 30
	olmo.NormPlacement = model.PlacementPost
	for _, c := range []struct {
		name        string
		cfg         model.Config
		attribution []string // what the attribution's line names; nil: no line
		lens        []string
	}{
		{"pre-norm", base, nil, nil},
		{"gemma 2", gemma, []string{"before the final soft-cap at 30", "ln1_post"}, []string{"soft-capped at 30"}},
		{"olmo 2", olmo, []string{"ln1_post"}, nil},
	} {
		r := readoutModel(t, c.cfg)
		doc := encode(t, r.JSON())
		circuits := doc["circuits"].(map[string]any)
		dla, _ := circuits["direct_logit"].(map[string]any)["readout"].(string)
		lens, _ := circuits["logit_lens_readout"].(string)
		if dla != analysis.AttributionReadout(c.cfg) || lens != analysis.LensReadout(c.cfg) {
			t.Errorf("%s: -json readouts %q and %q", c.name, dla, lens)
		}
		for _, words := range []struct {
			got  string
			want []string
		}{{dla, c.attribution}, {lens, c.lens}} {
			if (words.got == "") != (words.want == nil) {
				t.Errorf("%s: readout %q, want one naming %q", c.name, words.got, words.want)
			}
			for _, w := range words.want {
				if !strings.Contains(words.got, w) {
					t.Errorf("%s: readout %q names no %q", c.name, words.got, w)
				}
			}
		}
		var text bytes.Buffer
		if err := render.WriteInspect(&text, r.Text(true), render.Plain, 80); err != nil {
			t.Fatal(err)
		}
		said := strings.Count(text.String(), "where the readout is not linear:")
		if want := btoi(dla != "") + btoi(lens != ""); said != want {
			t.Errorf("%s: the text view says where the readout is not linear %d times, want %d:\n%s", c.name, said, want, text.String())
		}
		for _, line := range strings.Split(text.String(), "\n") {
			if len([]rune(line)) > 80 {
				t.Errorf("%s: a line of %d columns: %q", c.name, len([]rune(line)), line)
			}
		}
		v := r.CircuitsView()
		if v.DirectLogit.Readout != dla || v.LensReadout != lens {
			t.Errorf("%s: the PNG tables' readouts %q and %q", c.name, v.DirectLogit.Readout, v.LensReadout)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
