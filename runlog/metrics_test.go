package runlog

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/heads"
)

// writeLog writes recs to the log at path through Log, as train does.
func writeLog(t *testing.T, path string, recs ...Record) *Log {
	t.Helper()
	log, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if err := log.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	return log
}

// TestMetricsRoundTrip: the records train writes to metrics.jsonl read back
// equal, every field (the generated accuracies too), each kind in its list.
func TestMetricsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	gen, genTok := 0.5, 0.75
	train := []TrainRecord{{Step: 1, Loss: 3.25, LR: 1e-3, GradNorm: 0.5, TokensPerS: 12345.5}, {Step: 2, Loss: 1.0 / 3, LR: 2e-3, GradNorm: 1e-300, TokensPerS: 1}}
	eval := []EvalRecord{{Step: 2, EvalLoss: 0.25, TokenAcc: 0.5, SeqAcc: 0.125, GenSeqAcc: &gen, GenTokenAcc: &genTok}}
	atLength := []EvalRecord{{Step: 2, EvalLength: 16, EvalLoss: 2.5, TokenAcc: 0.25}}
	writeLog(t, filepath.Join(dir, MetricsFile), train[0], train[1], eval[0], atLength[0]).Close()
	got, err := ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := (&Logs{Dir: dir, Train: train, Eval: eval, AtLength: atLength}); !reflect.DeepEqual(got, want) {
		t.Errorf("read %+v, wrote %+v", got, want)
	}
}

// TestTruncateLog keeps lines up to the step, drops a torn last line and
// leaves a missing file missing; a corrupt complete line is refused naming
// the file and the line.
func TestTruncateLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, MetricsFile)
	if err := TruncateLog(path, 3, 10, MaxMetricsBytes(10, 0)); err != nil {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("TruncateLog created %s", path)
	}
	log := writeLog(t, path, TrainRecord{Step: 1, Loss: 1.5}, TrainRecord{Step: 2, Loss: 1.5}, TrainRecord{Step: 3, Loss: 1.5},
		TrainRecord{Step: 4, Loss: 1.5}, EvalRecord{Step: 4, EvalLoss: 0.25, TokenAcc: 0.5, SeqAcc: 1})
	if _, err := log.f.WriteString(`{"step":5,"lo`); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	if err := TruncateLog(path, 4, 10, MaxMetricsBytes(10, 0)); err != nil {
		t.Fatal(err)
	}
	r, err := ReadMetrics(dir)
	if err != nil || len(r.Train) != 4 || len(r.Eval) != 1 || r.Eval[0] != (EvalRecord{Step: 4, EvalLoss: 0.25, TokenAcc: 0.5, SeqAcc: 1}) {
		t.Fatalf("after truncating at 4: %+v %v", r, err)
	}
	if err := TruncateLog(path, 2, 10, MaxMetricsBytes(10, 0)); err != nil {
		t.Fatal(err)
	}
	if r, err = ReadMetrics(dir); err != nil || len(r.Train) != 2 || r.Train[1].Step != 2 || len(r.Eval) != 0 {
		t.Fatalf("after truncating at 2: %+v %v", r, err)
	}
	if err := os.WriteFile(path, []byte("{\"step\":1}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = TruncateLog(path, 2, 10, MaxMetricsBytes(10, 0))
	if want := "metrics.jsonl line 2 is not a metrics record: invalid character"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a corrupt complete line: %v, want %q", err, want)
	}
}

// TestLogWriteErrorNamesThePathOnce: a failed append reads "writing P:
// no space left on device", not "writing P: write P: ...".
func TestLogWriteErrorNamesThePathOnce(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	l := &Log{f: f, path: "runs/x/metrics.jsonl"}
	defer l.Close()
	err = l.Write(TrainRecord{Step: 1})
	if err == nil || err.Error() != "writing runs/x/metrics.jsonl: no space left on device" {
		t.Errorf("error %v", err)
	}
}

// TestLogRefusesNonFinite: a record holding a NaN or infinite value is not
// written; the error names the step and the value, and the log is left as
// it was.
func TestLogRefusesNonFinite(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		rec  Record
		want string
	}{
		{TrainRecord{Step: 3, Loss: nan}, "step 3: loss is NaN; stopping"},
		{EvalRecord{Step: 4, EvalLoss: 1, TokenAcc: inf}, "step 4: token_acc is +Inf; stopping"},
		{EvalRecord{Step: 4, GenSeqAcc: &nan}, "step 4: gen_seq_acc is NaN; stopping"},
		{RolesRecord{Step: 5, Heads: [][]map[heads.Pattern]float64{{{"self": 0.5}, {"self": 0.5, "induction": nan}}}}, "step 5: the induction score of layer 0 head 1 is NaN; stopping"},
		{CircuitsRecord{Step: 6, Copying: [][]float64{{0.5, inf}}}, "step 6: copying of layer 0 head 1 is +Inf; stopping"},
		{CircuitsRecord{Step: 6, Copying: [][]float64{{0.5}}, PrefixMatching: [][]float64{{nan}}}, "step 6: prefix_matching of layer 0 head 0 is NaN; stopping"},
		{CircuitsRecord{Step: 6, Copying: [][]float64{{0.5}}, ICL: &nan}, "step 6: icl is NaN; stopping"},
	} {
		path := filepath.Join(t.TempDir(), "log.jsonl")
		log := writeLog(t, path)
		err := log.Write(c.rec)
		log.Close()
		if err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", c.rec, err, c.want)
		}
		if raw, _ := os.ReadFile(path); len(raw) != 0 {
			t.Errorf("%+v: the log holds %q", c.rec, raw)
		}
	}
}
