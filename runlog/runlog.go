package runlog

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"math"
	"path/filepath"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/rundir"
)

// Files of a run directory read here.
const (
	MetricsFile  = rundir.MetricsFile
	RolesFile    = rundir.RolesFile
	CircuitsFile = rundir.CircuitsFile
)

// MaxFileBytes bounds each file Read reads: far more than any run logs.
const MaxFileBytes = 64 << 20

// FormedAt is the score above which a head's role counts as formed.
const FormedAt = 0.5

// RolesRecord is one line of roles.jsonl.
type RolesRecord struct {
	Step  int                           `json:"step"`
	Heads [][]map[heads.Pattern]float64 `json:"heads"` // [layer][head] pattern -> score
}

// CircuitsRecord is one line of circuits.jsonl: the induction papers'
// per-head metrics at one evaluation (see package analysis), on the same
// sequences every time.
type CircuitsRecord struct {
	Step int `json:"step"`
	// PrefixMatching is [layer][head] on RoleRows sequences of random
	// tokens repeated twice; nil for a context under 4 positions.
	PrefixMatching [][]float64 `json:"prefix_matching,omitempty"`
	Copying        [][]float64 `json:"copying"` // [layer][head], Σλ/Σ|λ| of the OV circuit
	// ICL is the in-context-learning score (late minus early loss) on
	// RoleRows induction examples; nil for other tasks.
	ICL *float64 `json:"icl,omitempty"`
}

// TrainPoint is a training line of metrics.jsonl.
type TrainPoint struct {
	Step int     `json:"step"`
	Loss float64 `json:"loss"`
	LR   float64 `json:"lr"`
}

// MaxRoleMaps bounds the head score maps Read keeps from roles.jsonl (the
// heads of a line times its lines): a million, some hundred megabytes, far
// beyond a run's (64 heads evaluated 10000 times).
const MaxRoleMaps = 1 << 20

// RoleRows is how many held-out rows each line of roles.jsonl scores the
// heads on: the first RoleRows rows of the run's held-out set, the same
// rows at every evaluation (train writes it so).
const RoleRows = 32

// EvalPoint is an evaluation line of metrics.jsonl.
type EvalPoint struct {
	Step int `json:"step"`
	// Length is the task length of a train.eval_lengths evaluation (in
	// Run.AtLength); 0 for the evaluation at the trained length.
	Length   int     `json:"eval_length,omitempty"`
	EvalLoss float64 `json:"eval_loss"`
	TokenAcc float64 `json:"token_acc"`
	SeqAcc   float64 `json:"seq_acc"`
}

// HeadHistory is one head's strongest role through training.
type HeadHistory struct {
	Layer int           `json:"layer"`
	Head  int           `json:"head"`
	Role  heads.Pattern `json:"role"` // the best pattern at the last evaluation
	// Formed is the first step whose Role score is above FormedAt, nil if none.
	Formed *int      `json:"formed_step"`
	Steps  []int     `json:"steps"`  // every evaluation's step
	Scores []float64 `json:"scores"` // Role's score at each of Steps
}

// Run is what Read finds in a run directory.
type Run struct {
	Dir   string       `json:"dir"`
	Train []TrainPoint `json:"train"`
	Eval  []EvalPoint  `json:"eval"`
	// AtLength are the evaluations at other lengths (train.eval_lengths),
	// in file order.
	AtLength []EvalPoint     `json:"eval_at_length,omitempty"`
	Heads    [][]HeadHistory `json:"heads"` // [layer][head]; empty without roles.jsonl
	// Circuits are circuits.jsonl's lines, in order; empty without it.
	Circuits []CircuitsRecord `json:"circuits,omitempty"`
}

// Read reads dir's metrics.jsonl (required) and roles.jsonl (optional: runs
// without evaluation, and older runs, have none).
func Read(dir string) (*Run, error) {
	r, err := ReadMetrics(dir)
	if err != nil {
		return nil, err
	}
	var roles []RolesRecord
	scores := 0
	err = readLines(filepath.Join(dir, RolesFile), "head roles record", func(line []byte) error {
		var rec RolesRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			return err
		}
		// A head map costs far more in memory than its bytes ("{}" is two):
		// bound the maps a log may make, not only its size.
		for _, layer := range rec.Heads {
			scores += len(layer)
		}
		if scores > MaxRoleMaps {
			return errors.Errorf("more than %d head score maps in all: not a log train writes", MaxRoleMaps)
		}
		if len(roles) > 0 && !sameShape(rec.Heads, roles[0].Heads) {
			return errors.New("a different number of layers or heads than the first line")
		}
		if len(roles) > 0 && rec.Step <= roles[len(roles)-1].Step {
			return errors.Errorf("step %d after step %d: the steps of a run's log increase", rec.Step, roles[len(roles)-1].Step)
		}
		roles = append(roles, rec)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	r.Heads = histories(roles)
	if r.Circuits, err = readCircuits(dir); err != nil {
		return nil, err
	}
	return r, nil
}

// readCircuits reads circuits.jsonl, when there is one: every line of one
// shape, steps increasing, and no more values than MaxRoleMaps.
func readCircuits(dir string) ([]CircuitsRecord, error) {
	var out []CircuitsRecord
	values := 0
	err := readLines(filepath.Join(dir, CircuitsFile), "circuits record", func(line []byte) error {
		var rec CircuitsRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			return err
		}
		for _, layer := range rec.Copying {
			values += len(layer)
		}
		if values > MaxRoleMaps {
			return errors.Errorf("more than %d head scores in all: not a log train writes", MaxRoleMaps)
		}
		if len(rec.PrefixMatching) > 0 && !sameGrid(rec.PrefixMatching, rec.Copying) {
			return errors.New("prefix matching and copying cover different heads")
		}
		if len(out) > 0 {
			last := out[len(out)-1]
			if !sameGrid(rec.Copying, last.Copying) || (rec.ICL == nil) != (last.ICL == nil) || len(rec.PrefixMatching) != len(last.PrefixMatching) {
				return errors.New("a different set of metrics or heads than the line before")
			}
			if rec.Step <= last.Step {
				return errors.Errorf("step %d after step %d: the steps of a run's log increase", rec.Step, last.Step)
			}
		}
		out = append(out, rec)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return out, nil
}

func sameGrid(a, b [][]float64) bool {
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

// ReadMetrics reads dir's metrics.jsonl alone (Run.Heads stays empty).
func ReadMetrics(dir string) (*Run, error) {
	r := &Run{Dir: dir}
	err := readLines(filepath.Join(dir, MetricsFile), "metrics record", func(line []byte) error {
		var rec struct {
			Step     int      `json:"step"`
			Loss     *float64 `json:"loss"`
			LR       float64  `json:"lr"`
			EvalLoss *float64 `json:"eval_loss"`
			Length   int      `json:"eval_length"`
			TokenAcc float64  `json:"token_acc"`
			SeqAcc   float64  `json:"seq_acc"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return err
		}
		if err := increasing(r, rec.Step, rec.Loss != nil, rec.Length); err != nil {
			return err
		}
		switch {
		case rec.Loss != nil:
			r.Train = append(r.Train, TrainPoint{Step: rec.Step, Loss: *rec.Loss, LR: rec.LR})
		case rec.EvalLoss != nil && rec.Length != 0:
			r.AtLength = append(r.AtLength, EvalPoint{Step: rec.Step, Length: rec.Length, EvalLoss: *rec.EvalLoss, TokenAcc: rec.TokenAcc, SeqAcc: rec.SeqAcc})
		case rec.EvalLoss != nil:
			r.Eval = append(r.Eval, EvalPoint{Step: rec.Step, EvalLoss: *rec.EvalLoss, TokenAcc: rec.TokenAcc, SeqAcc: rec.SeqAcc})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// histories follows each head's strongest role (at the last record).
func histories(roles []RolesRecord) [][]HeadHistory {
	if len(roles) == 0 {
		return nil
	}
	last := roles[len(roles)-1]
	out := make([][]HeadHistory, len(last.Heads))
	for l, layer := range last.Heads {
		for h, scores := range layer {
			hist := HeadHistory{Layer: l, Head: h, Role: heads.Diffuse}
			best := 0.0
			for _, p := range heads.Patterns {
				if s := scores[p]; s > best {
					hist.Role, best = p, s
				}
			}
			for _, rec := range roles {
				s := rec.Heads[l][h][hist.Role]
				hist.Steps = append(hist.Steps, rec.Step)
				hist.Scores = append(hist.Scores, s)
				if hist.Formed == nil && s > FormedAt {
					step := rec.Step
					hist.Formed = &step
				}
			}
			out[l] = append(out[l], hist)
		}
	}
	return out
}

// increasing refuses a metrics line whose step is not above the last one
// of its kind (training lines, evaluations, evaluations at one eval
// length): a log written by train never goes back, and a chart of one that
// does would walk off its axis.
func increasing(r *Run, step int, training bool, length int) error {
	last := math.MinInt
	switch {
	case training && len(r.Train) > 0:
		last = r.Train[len(r.Train)-1].Step
	case !training && length == 0 && len(r.Eval) > 0:
		last = r.Eval[len(r.Eval)-1].Step
	case !training && length != 0:
		for _, p := range r.AtLength {
			if p.Length == length {
				last = p.Step
			}
		}
	}
	if step <= last {
		return errors.Errorf("step %d after step %d: the steps of a run's log increase", step, last)
	}
	return nil
}

func sameShape(a, b [][]map[heads.Pattern]float64) bool {
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

// readLines calls each with every complete line of the file at path; a line
// without a "step" is refused, a torn last line skipped. An error names the
// file, the line and what it should have been.
func readLines(path, what string, each func(line []byte) error) error {
	raw, err := safefile.ReadLimit(path, MaxFileBytes, "a run's log may take")
	if err != nil {
		return err
	}
	for n := 1; len(raw) > 0; n++ {
		end := bytes.IndexByte(raw, '\n')
		if end < 0 {
			break
		}
		line := raw[:end]
		raw = raw[end+1:]
		var rec struct {
			Step *int `json:"step"`
		}
		err := json.Unmarshal(line, &rec)
		if err == nil && rec.Step == nil {
			err = errors.New("no step")
		}
		if err == nil {
			err = each(line)
		}
		if err != nil {
			return errors.Errorf("%s line %d is not a %s: %v: %.80q", path, n, what, err, line)
		}
	}
	return nil
}
