package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/safefile"
)

// TrainRecord is a training line of metrics.jsonl. Loss is the mean
// cross-entropy over the scored positions of this step's batch (not an average
// over the logging interval); GradNorm is the global gradient norm before
// clipping; TokensPerS counts every fed position (B·T per step) over the wall
// time since the previous training line and is the only field that depends on
// the clock.
type TrainRecord struct {
	Step       int     `json:"step"`
	Loss       float64 `json:"loss"`
	LR         float64 `json:"lr"`
	GradNorm   float64 `json:"grad_norm"`
	TokensPerS float64 `json:"tokens_per_s"`
}

// EvalRecord is an evaluation line of metrics.jsonl, computed on the whole
// held-out set over the positions the task scores: EvalLoss is the mean
// cross-entropy, TokenAcc the fraction of scored positions whose argmax
// prediction is the target, SeqAcc the fraction of sequences with every scored
// position right (exact match).
type EvalRecord struct {
	Step int `json:"step"`
	// EvalLength is the task length of a train.eval_lengths evaluation; 0
	// (left out of the line) on the evaluation at the trained length.
	EvalLength int     `json:"eval_length,omitempty"`
	EvalLoss   float64 `json:"eval_loss"`
	TokenAcc   float64 `json:"token_acc"`
	SeqAcc     float64 `json:"seq_acc"`
	// GenSeqAcc and GenTokenAcc are SeqAcc and TokenAcc of the answers the
	// model writes on its own, greedily (train.eval_generate); nil otherwise.
	// Exact match equals SeqAcc whenever each answer token's input is the
	// previous target, as in every generated task; token accuracy is lower
	// once an early mistake is fed back.
	GenSeqAcc   *float64 `json:"gen_seq_acc,omitempty"`
	GenTokenAcc *float64 `json:"gen_token_acc,omitempty"`
}

// metricsLog appends one JSON object per line to metrics.jsonl. Each line goes
// to the file in a single write, so a killed run leaves at most one torn last
// line, which truncateMetrics drops on resume.
type metricsLog struct {
	f    *os.File
	path string
}

func openMetrics(path string) (*metricsLog, error) {
	f, err := safefile.OpenForWrite(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, errors.Wrap(err, "opening the metrics log")
	}
	return &metricsLog{f: f, path: path}, nil
}

func (l *metricsLog) write(record any) error {
	if err := finite(record); err != nil {
		return err
	}
	line, err := json.Marshal(record)
	if err != nil {
		return errors.Wrapf(err, "encoding a line of %s", l.path)
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) { // "writing P: no space left", not "writing P: write P: ..."
			err = pe.Err
		}
		return errors.Wrapf(err, "writing %s", l.path)
	}
	return nil
}

// finite refuses a record (a TrainRecord or EvalRecord, or a pointer to one)
// with a NaN or infinite field, naming the step and the field. JSON cannot
// hold such a value, and it means the run has diverged: an absurd learning
// rate can leave the training loss of a step finite and the evaluation after
// its update NaN.
func finite(record any) error {
	v := reflect.Indirect(reflect.ValueOf(record))
	if v.Kind() != reflect.Struct {
		return nil
	}
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() == reflect.Float64 && (math.IsNaN(f.Float()) || math.IsInf(f.Float(), 0)) {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			return errors.Errorf("step %d: %s is %v; stopping", v.FieldByName("Step").Int(), name, f.Float())
		}
	}
	return nil
}

func (l *metricsLog) close() error {
	return errors.Wrapf(l.f.Close(), "closing %s", l.path)
}

// maxMetricsLine bounds one line of metrics.jsonl: a TrainRecord, the longer
// record, is about 50 bytes of keys and punctuation, a step of at most 19
// digits and four numbers of at most 24 characters each (Go writes
// "-1.2345678901234567e-300" at worst), under 170 bytes in all.
const maxMetricsLine = 256

// MaxMetricsBytes is the most a run of steps steps writes to metrics.jsonl
// with extra train.eval_lengths: at most a training line and 1+extra
// evaluation lines per step. steps is at most MaxSteps, so it cannot
// overflow.
func MaxMetricsBytes(steps, extra int) int64 {
	return int64(2+max(extra, 0)) * int64(max(steps, 0)+1) * maxMetricsLine
}

// truncateMetrics atomically rewrites the log at path keeping only the lines
// whose step is at most step, so a resumed run from a checkpoint of that step
// appends exactly what the interrupted run had logged after it. An unfinished
// last line (no newline, from a kill mid-write) is dropped; a missing file is
// left missing. The log was written by a run of steps steps, which bounds it
// to limit bytes (MaxMetricsBytes, MaxRolesBytes): a larger file, or one that
// is not a regular file (a pipe, a symlink to /dev/zero), is refused before
// it is read (safefile.ReadLimit).
func truncateMetrics(path string, step, steps int, limit int64) error {
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	raw, err := safefile.ReadLimit(path, limit, fmt.Sprintf("a run of %d steps writes at most", steps))
	if err != nil {
		return errors.Wrap(err, "cannot resume")
	}
	var kept bytes.Buffer
	for n := 1; len(raw) > 0; n++ {
		end := bytes.IndexByte(raw, '\n')
		if end < 0 {
			break
		}
		line := raw[:end+1]
		raw = raw[end+1:]
		var rec struct {
			Step *int `json:"step"`
		}
		if err := json.Unmarshal(line, &rec); err != nil || rec.Step == nil {
			return errors.Errorf("%s line %d is not a metrics record: %.80q", path, n, line)
		}
		if *rec.Step <= step {
			kept.Write(line)
		}
	}
	return safefile.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(kept.Bytes())
		return err
	})
}

// ReadMetrics returns the lines of a metrics.jsonl file as generic JSON
// objects, in order. A path that is not a regular file is refused
// (safefile.OpenRegular).
func ReadMetrics(path string) ([]map[string]any, error) {
	f, err := safefile.OpenRegular(path)
	if err != nil {
		return nil, errors.Wrap(err, "reading metrics")
	}
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, errors.Wrapf(err, "%s line %d", path, len(lines)+1)
		}
		lines = append(lines, rec)
	}
	return lines, errors.Wrapf(sc.Err(), "reading %s", path)
}
