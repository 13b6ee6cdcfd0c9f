package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/attnscope/attnscope/internal/msg/msgtest"
)

// TestFineTuneNeverWritesOverItsModel (issue 42, case 2): train writes only
// a run's files, into a directory holding nothing else, so a fine-tuning
// run given its pretrained model's own directory (nanoGPT's out_dir, with
// -fresh too) is refused naming the files that are not a run's, and the
// model's files are byte-identical after.
func TestFineTuneNeverWritesOverItsModel(t *testing.T) {
	pre := nanoGPTDir(t)
	before := map[string][]byte{}
	for _, name := range []string{"ckpt.pt", "meta.pkl"} {
		raw, err := os.ReadFile(filepath.Join(pre, name))
		if err != nil {
			t.Fatal(err)
		}
		before[name] = raw
	}
	cfg := writeConfig(t, fmt.Sprintf(fineTuneYAML, pre, corpus))
	for _, extra := range [][]string{nil, {"-fresh"}} {
		stdout, _, err := runCmd(append([]string{"-config", cfg, "-run", pre}, extra...)...)
		msgtest.Refusal(t, fmt.Sprintf("-run the model's directory %v", extra), err, "holds files that are not a run's", `"ckpt.pt"`, `"meta.pkl"`)
		if stdout != "" {
			t.Errorf("%v: printed %q", extra, stdout)
		}
	}
	entries, err := os.ReadDir(pre)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(before) {
		t.Errorf("the model's directory holds %d entries after, want its %d files alone", len(entries), len(before))
	}
	for name, raw := range before {
		if got, err := os.ReadFile(filepath.Join(pre, name)); err != nil || !bytes.Equal(got, raw) {
			t.Errorf("%s changed (%v)", name, err)
		}
	}
}
