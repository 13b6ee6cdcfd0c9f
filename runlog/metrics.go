package runlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
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
	// BitsPerChar (the character-level text task) and Perplexity (a text
	// read through a pretrained model's tokenizer, per token) read EvalLoss
	// as a language model's figure: every position of a text is scored and
	// no window is ever entirely right, so SeqAcc says nothing there. nil on
	// every other task.
	BitsPerChar *float64 `json:"bits_per_char,omitempty"`
	Perplexity  *float64 `json:"perplexity,omitempty"`
}

// Record is a line of one of a run's logs: a TrainRecord or an EvalRecord
// (metrics.jsonl), a RolesRecord (roles.jsonl) or a CircuitsRecord
// (circuits.jsonl).
type Record interface {
	step() int
	// nonFinite names the first NaN or infinite value of the record and
	// gives it; ok is false when every value is finite.
	nonFinite() (what string, value float64, ok bool)
}

func (r TrainRecord) step() int { return r.Step }
func (r EvalRecord) step() int  { return r.Step }

func (r TrainRecord) nonFinite() (string, float64, bool) { return nonFiniteField(r) }
func (r EvalRecord) nonFinite() (string, float64, bool)  { return nonFiniteField(r) }

// nonFiniteField finds a NaN or infinite float64 (or *float64) field of the
// struct record, named by its JSON key.
func nonFiniteField(record any) (string, float64, bool) {
	v := reflect.ValueOf(record)
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			f = f.Elem()
		}
		if f.Kind() == reflect.Float64 && !isFinite(f.Float()) {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			return name, f.Float(), true
		}
	}
	return "", 0, false
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Log appends one JSON object per line to one of a run's logs. Each line goes
// to the file in a single write, so a killed run leaves at most one torn last
// line, which TruncateLog drops on resume and the readers skip.
type Log struct {
	f    *os.File
	path string
}

// OpenLog opens the log at path for appending, creating it if missing; a
// symbolic link is refused (safefile.OpenForWrite).
func OpenLog(path string) (*Log, error) {
	f, err := safefile.OpenForWrite(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, errors.Wrap(err, "opening a log of the run") // err names the path
	}
	return &Log{f: f, path: path}, nil
}

// Write appends rec as one line. A record holding a NaN or infinite value is
// refused, naming the step and the value: JSON cannot hold one, and it means
// the run has diverged (an absurd learning rate can leave the training loss
// of a step finite and the evaluation after its update NaN).
func (l *Log) Write(rec Record) error {
	if what, v, ok := rec.nonFinite(); ok {
		return errors.Errorf("step %d: %s is %v; stopping", rec.step(), what, v)
	}
	line, err := json.Marshal(rec)
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

// Close closes the log file.
func (l *Log) Close() error {
	return errors.Wrapf(l.f.Close(), "closing %s", l.path)
}

// maxLineBytes bounds a line of metrics.jsonl: a TrainRecord, the longer
// record, is about 50 bytes of keys and punctuation, a step of at most 19
// digits and four numbers of at most 24 characters each (Go writes
// "-1.2345678901234567e-300" at worst), under 170 bytes in all. It is also
// what the other logs' lines take besides their heads.
const maxLineBytes = 256

// MaxMetricsBytes is the most a run of steps steps writes to metrics.jsonl
// with extra train.eval_lengths: at most a training line and 1+extra
// evaluation lines per step. steps is at most MaxSteps, so it cannot
// overflow.
func MaxMetricsBytes(steps, extra int) int64 {
	return int64(2+max(extra, 0)) * int64(max(steps, 0)+1) * maxLineBytes
}

// TruncateLog atomically rewrites the log at path keeping only the lines
// whose step is at most step, so a run resumed from a checkpoint of that step
// appends exactly what the interrupted run had logged after it. An unfinished
// last line (no newline, from a kill mid-write) is dropped; a missing file is
// left missing. The log was written by a run of steps steps, which bounds it
// to limit bytes (MaxMetricsBytes, MaxRolesBytes, MaxCircuitsBytes): a larger
// file, or one that is not a regular file (a pipe, a symlink to /dev/zero),
// is refused before it is read (safefile.ReadLimit). Only "step" is read, so
// lines of every shape a run ever wrote are kept as they are.
func TruncateLog(path string, step, steps int, limit int64) error {
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
		s, err := lineStep(line)
		if err != nil {
			return errors.Errorf("%s line %d is not a %s: %v: %.80q", path, n, recordKind(path), err, line)
		}
		if s <= step {
			kept.Write(line)
		}
	}
	return safefile.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(kept.Bytes())
		return err
	})
}

// lineStep is the "step" of a log line; a line without one is an error.
func lineStep(line []byte) (int, error) {
	var rec struct {
		Step *int `json:"step"`
	}
	if err := json.Unmarshal(line, &rec); err != nil {
		return 0, err
	}
	if rec.Step == nil {
		return 0, errors.New("no step")
	}
	return *rec.Step, nil
}

// recordKind names what a line of the log at path is, for an error.
func recordKind(path string) string {
	switch filepath.Base(path) {
	case RolesFile:
		return "head roles record"
	case CircuitsFile:
		return "circuits record"
	}
	return "metrics record"
}
