package runlog

import (
	"encoding/json"
	"fmt"

	"github.com/pkg/errors"
)

// CircuitsRecord is one line of circuits.jsonl: the induction papers'
// per-head metrics at one evaluation (see package analysis), on the same
// sequences every time. In memory the head metrics are [layer][head] grids;
// in the file each head is a record (MarshalJSON):
//
//	{"step":50,"heads":[{"layer":0,"head":0,"prefix_matching":0.06,"copying":0.99},...],"icl":-0.02}
//
// Runs written before hold the older shape, the grids themselves:
// {"step":50,"prefix_matching":[[0.06,...],...],"copying":[[0.99,...],...],"icl":-0.02};
// UnmarshalJSON reads both.
type CircuitsRecord struct {
	Step int
	// PrefixMatching is [layer][head] on RoleRows sequences of random
	// tokens repeated twice; nil for a context under 4 positions.
	PrefixMatching [][]float64
	Copying        [][]float64 // [layer][head], Σλ/Σ|λ| of the OV circuit
	// ICL is the in-context-learning score (late minus early loss) on
	// RoleRows induction examples; nil for other tasks.
	ICL *float64
}

// headCircuits is a head's record in a line of circuits.jsonl.
type headCircuits struct {
	headID
	PrefixMatching *float64 `json:"prefix_matching,omitempty"`
	Copying        float64  `json:"copying"`
}

// circuitsLine is a line of circuits.jsonl as written.
type circuitsLine struct {
	Step  int            `json:"step"`
	Heads []headCircuits `json:"heads"`
	ICL   *float64       `json:"icl,omitempty"`
}

// MarshalJSON writes the record as a line of circuits.jsonl.
func (r CircuitsRecord) MarshalJSON() ([]byte, error) {
	if r.PrefixMatching != nil && !sameGrid(r.PrefixMatching, r.Copying) {
		return nil, errors.New("prefix matching and copying cover different heads")
	}
	line := circuitsLine{Step: r.Step, Heads: []headCircuits{}, ICL: r.ICL}
	for l, layer := range r.Copying {
		for h, copying := range layer {
			rec := headCircuits{headID: headID{Layer: l, Head: h}, Copying: copying}
			if r.PrefixMatching != nil {
				rec.PrefixMatching = &r.PrefixMatching[l][h]
			}
			line.Heads = append(line.Heads, rec)
		}
	}
	return json.Marshal(line)
}

// UnmarshalJSON reads a line of circuits.jsonl of either shape.
func (r *CircuitsRecord) UnmarshalJSON(b []byte) error {
	var line struct {
		circuitsLine
		// The older shape's grids.
		PrefixMatching [][]float64 `json:"prefix_matching"`
		Copying        [][]float64 `json:"copying"`
	}
	if err := json.Unmarshal(b, &line); err != nil {
		return err
	}
	*r = CircuitsRecord{Step: line.Step, ICL: line.ICL}
	if line.Heads == nil { // the older shape
		r.PrefixMatching, r.Copying = line.PrefixMatching, line.Copying
		return nil
	}
	layers, err := layerCount(line.Heads)
	if err != nil {
		return err
	}
	prefixed := 0
	r.Copying = make([][]float64, layers)
	for _, rec := range line.Heads {
		r.Copying[rec.Layer] = append(r.Copying[rec.Layer], rec.Copying)
		if rec.PrefixMatching != nil {
			prefixed++
		}
	}
	switch prefixed {
	case 0:
	case len(line.Heads):
		r.PrefixMatching = make([][]float64, layers)
		for _, rec := range line.Heads {
			r.PrefixMatching[rec.Layer] = append(r.PrefixMatching[rec.Layer], *rec.PrefixMatching)
		}
	default:
		return errors.Errorf("prefix_matching on %d of %d heads: a line has it on every head or on none", prefixed, len(line.Heads))
	}
	return nil
}

func (r CircuitsRecord) step() int { return r.Step }

func (r CircuitsRecord) nonFinite() (string, float64, bool) {
	for _, grid := range []struct {
		name   string
		values [][]float64
	}{{"prefix_matching", r.PrefixMatching}, {"copying", r.Copying}} {
		for l, layer := range grid.values {
			for h, v := range layer {
				if !isFinite(v) {
					return fmt.Sprintf("%s of layer %d head %d", grid.name, l, h), v, true
				}
			}
		}
	}
	if r.ICL != nil && !isFinite(*r.ICL) {
		return "icl", *r.ICL, true
	}
	return "", 0, false
}

// sameGrid reports whether a and b have the same number of layers and of
// heads in each.
func sameGrid[T any](a, b [][]T) bool {
	if len(a) != len(b) {
		return false
	}
	for l := range a {
		if len(a[l]) != len(b[l]) {
			return false
		}
	}
	return true
}

// MaxCircuitsBytes is the most a run of steps steps of a model of headCount
// heads writes to circuits.jsonl, in either shape: a line per step at most,
// each a step, two numbers per head (with its place) and the ICL score.
func MaxCircuitsBytes(steps, headCount int) int64 {
	return int64(max(steps, 0)+1) * (maxLineBytes + int64(max(headCount, 0))*2*maxScoreBytes)
}
