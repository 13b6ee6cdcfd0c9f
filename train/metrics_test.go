package train

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTruncateMetrics keeps lines up to the step, drops a torn last line and
// leaves a missing file missing.
func TestTruncateMetrics(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "metrics.jsonl")
	if err := truncateMetrics(path, 3, 10, MaxMetricsBytes(10, 0)); err != nil {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("truncateMetrics created %s", path)
	}
	log, err := openMetrics(path)
	if err != nil {
		t.Fatal(err)
	}
	for s := 1; s <= 4; s++ {
		if err := log.write(TrainRecord{Step: s, Loss: 1.5}); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.write(EvalRecord{Step: 4, EvalLoss: 0.25, TokenAcc: 0.5, SeqAcc: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := log.f.WriteString(`{"step":5,"lo`); err != nil {
		t.Fatal(err)
	}
	if err := log.close(); err != nil {
		t.Fatal(err)
	}
	if err := truncateMetrics(path, 4, 10, MaxMetricsBytes(10, 0)); err != nil {
		t.Fatal(err)
	}
	lines, err := ReadMetrics(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 5 || lines[4]["eval_loss"] != 0.25 || lines[4]["step"] != 4.0 {
		t.Fatalf("after truncating at 4: %v", lines)
	}
	if err := truncateMetrics(path, 2, 10, MaxMetricsBytes(10, 0)); err != nil {
		t.Fatal(err)
	}
	if lines, _ = ReadMetrics(path); len(lines) != 2 || lines[1]["step"] != 2.0 {
		t.Fatalf("after truncating at 2: %v", lines)
	}
	if err := os.WriteFile(path, []byte("{\"step\":1}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := truncateMetrics(path, 2, 10, MaxMetricsBytes(10, 0)); err == nil {
		t.Error("a corrupt complete line was accepted")
	}
}

// TestMetricsWriteErrorNamesThePathOnce: a failed append reads "writing P:
// no space left on device", not "writing P: write P: ...".
func TestMetricsWriteErrorNamesThePathOnce(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	l := &metricsLog{f: f, path: "runs/x/metrics.jsonl"}
	defer l.close()
	err = l.write(TrainRecord{Step: 1})
	if err == nil || err.Error() != "writing runs/x/metrics.jsonl: no space left on device" {
		t.Errorf("error %v", err)
	}
}
