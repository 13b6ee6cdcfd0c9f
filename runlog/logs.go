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
)

// The logs of a run directory, each one JSON object per line.
const (
	MetricsFile  = "metrics.jsonl"  // TrainRecord and EvalRecord lines
	RolesFile    = "roles.jsonl"    // the head roles at each evaluation (RolesRecord)
	CircuitsFile = "circuits.jsonl" // prefix matching, copying and the ICL score at each evaluation (CircuitsRecord)
)

// MaxLogBytes bounds each log ReadLogs reads: far more than any run logs.
const MaxLogBytes = 64 << 20

// MaxRoleMaps bounds the head score maps ReadLogs keeps from roles.jsonl (the
// heads of a line times its lines), and the head scores it keeps from
// circuits.jsonl: a million, some hundred megabytes, far beyond a run's (64
// heads evaluated 10000 times).
const MaxRoleMaps = 1 << 20

// FormedAt is the score above which a head's role counts as formed.
const FormedAt = 0.5

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

// Logs is what ReadLogs finds in a run directory.
type Logs struct {
	Dir   string        `json:"dir"`
	Train []TrainRecord `json:"train"`
	Eval  []EvalRecord  `json:"eval"`
	// AtLength are the evaluations at other lengths (train.eval_lengths),
	// in file order.
	AtLength []EvalRecord    `json:"eval_at_length,omitempty"`
	Heads    [][]HeadHistory `json:"heads"` // [layer][head]; empty without roles.jsonl
	// Circuits are circuits.jsonl's lines, in order; empty without it.
	Circuits []CircuitsRecord `json:"circuits,omitempty"`
}

// ReadLogs reads dir's metrics.jsonl (required), and roles.jsonl and
// circuits.jsonl (optional: runs without evaluation, and older runs, have
// none).
func ReadLogs(dir string) (*Logs, error) {
	r, err := ReadMetrics(dir)
	if err != nil {
		return nil, err
	}
	roles, err := readRoles(dir)
	if err != nil {
		return nil, err
	}
	r.Heads = histories(roles)
	if r.Circuits, err = readCircuits(dir); err != nil {
		return nil, err
	}
	return r, nil
}

// ReadMetrics reads dir's metrics.jsonl alone (Logs.Heads stays empty).
// Training lines are those with a "loss", evaluations those with an
// "eval_loss" (at another length when they have an "eval_length").
func ReadMetrics(dir string) (*Logs, error) {
	r := &Logs{Dir: dir}
	err := readLines(filepath.Join(dir, MetricsFile), func(line []byte) error {
		var kind struct {
			Loss     *float64 `json:"loss"`
			EvalLoss *float64 `json:"eval_loss"`
		}
		if err := json.Unmarshal(line, &kind); err != nil {
			return err
		}
		switch {
		case kind.Loss != nil:
			var rec TrainRecord
			if err := json.Unmarshal(line, &rec); err != nil {
				return err
			}
			if err := increasing(r, rec.Step, true, 0); err != nil {
				return err
			}
			r.Train = append(r.Train, rec)
		case kind.EvalLoss != nil:
			var rec EvalRecord
			if err := json.Unmarshal(line, &rec); err != nil {
				return err
			}
			if err := increasing(r, rec.Step, false, rec.EvalLength); err != nil {
				return err
			}
			if rec.EvalLength != 0 {
				r.AtLength = append(r.AtLength, rec)
			} else {
				r.Eval = append(r.Eval, rec)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// readRoles reads roles.jsonl, when there is one: every line of one shape
// of model, steps increasing, and no more head maps than MaxRoleMaps.
func readRoles(dir string) ([]RolesRecord, error) {
	maps := 0
	return readOptional(filepath.Join(dir, RolesFile), func(rec RolesRecord, before []RolesRecord) error {
		// A head map costs far more in memory than its bytes ("{}" is two):
		// bound the maps a log may make, not only its size.
		for _, layer := range rec.Heads {
			maps += len(layer)
		}
		if maps > MaxRoleMaps {
			return errors.Errorf("more than %d head score maps in all: not a log train writes", MaxRoleMaps)
		}
		if len(before) > 0 && !sameGrid(rec.Heads, before[0].Heads) {
			return errors.New("a different number of layers or heads than the first line")
		}
		if len(before) > 0 && rec.Step <= before[len(before)-1].Step {
			return errors.Errorf("step %d after step %d: the steps of a run's log increase", rec.Step, before[len(before)-1].Step)
		}
		return nil
	})
}

// readCircuits reads circuits.jsonl, when there is one: every line of one
// shape, steps increasing, and no more values than MaxRoleMaps.
func readCircuits(dir string) ([]CircuitsRecord, error) {
	values := 0
	return readOptional(filepath.Join(dir, CircuitsFile), func(rec CircuitsRecord, before []CircuitsRecord) error {
		for _, layer := range rec.Copying {
			values += len(layer)
		}
		if values > MaxRoleMaps {
			return errors.Errorf("more than %d head scores in all: not a log train writes", MaxRoleMaps)
		}
		if len(rec.PrefixMatching) > 0 && !sameGrid(rec.PrefixMatching, rec.Copying) {
			return errors.New("prefix matching and copying cover different heads")
		}
		if len(before) > 0 {
			last := before[len(before)-1]
			if !sameGrid(rec.Copying, last.Copying) || (rec.ICL == nil) != (last.ICL == nil) || len(rec.PrefixMatching) != len(last.PrefixMatching) {
				return errors.New("a different set of metrics or heads than the line before")
			}
			if rec.Step <= last.Step {
				return errors.Errorf("step %d after step %d: the steps of a run's log increase", rec.Step, last.Step)
			}
		}
		return nil
	})
}

// readOptional reads the log at path, when there is one, as records of type
// T, each accepted by check given the records before it; a missing log has
// none.
func readOptional[T any](path string, check func(rec T, before []T) error) ([]T, error) {
	var out []T
	err := readLines(path, func(line []byte) error {
		var rec T
		if err := json.Unmarshal(line, &rec); err != nil {
			return err
		}
		if err := check(rec, out); err != nil {
			return err
		}
		out = append(out, rec)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return out, nil
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
func increasing(r *Logs, step int, training bool, length int) error {
	last := math.MinInt
	switch {
	case training && len(r.Train) > 0:
		last = r.Train[len(r.Train)-1].Step
	case !training && length == 0 && len(r.Eval) > 0:
		last = r.Eval[len(r.Eval)-1].Step
	case !training && length != 0:
		for _, p := range r.AtLength {
			if p.EvalLength == length {
				last = p.Step
			}
		}
	}
	if step <= last {
		return errors.Errorf("step %d after step %d: the steps of a run's log increase", step, last)
	}
	return nil
}

// readLines calls each with every complete line of the log at path; a line
// without a "step" is refused, a torn last line skipped. A file larger than
// MaxLogBytes, or not a regular file, is refused before it is read. An
// error names the file, the line and what it should have been.
func readLines(path string, each func(line []byte) error) error {
	raw, err := safefile.ReadLimit(path, MaxLogBytes, "a run's log may take")
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
		_, err := lineStep(line)
		if err == nil {
			err = each(line)
		}
		if err != nil {
			return errors.Errorf("%s line %d is not a %s: %v: %.80q", path, n, recordKind(path), err, line)
		}
	}
	return nil
}
