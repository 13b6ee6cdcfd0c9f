package runlog

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// rolesSelf is a line of roles.jsonl of one head whose self score is score.
func rolesSelf(step int, score float64) string {
	return fmt.Sprintf(`{"step":%d,"roles":["self"],"heads":[{"layer":0,"head":0,"scores":[%v]}]}`+"\n", step, score)
}

func writeRun(t *testing.T, metrics, roles string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, MetricsFile), []byte(metrics), 0o644); err != nil {
		t.Fatal(err)
	}
	if roles != "" {
		if err := os.WriteFile(filepath.Join(dir, RolesFile), []byte(roles), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRead: training and evaluation lines are told apart by their keys
// (evaluations at other lengths by eval_length), a
// torn last line is skipped, and each head follows the pattern that is
// strongest at the last evaluation, formed at the first step whose score
// is above 0.5 (0.5 itself is not).
func TestRead(t *testing.T) {
	metrics := `{"step":10,"loss":3.2,"lr":0.01}
{"step":10,"eval_loss":3.1,"token_acc":0.1,"seq_acc":0}
{"step":20,"loss":0.5,"lr":0.01}
{"step":20,"eval_loss":0.4,"token_acc":0.9,"seq_acc":0.5}
{"step":20,"eval_length":16,"eval_loss":2.5,"token_acc":0.3,"seq_acc":0}
{"step":30,"loss":0.`
	roles := `{"step":10,"roles":["induction","previous-token","self"],"heads":[{"layer":0,"head":0,"scores":[null,0.1,0.3]},{"layer":0,"head":1,"scores":[0,null,0.2]}]}
{"step":20,"roles":["induction","previous-token","self"],"heads":[{"layer":0,"head":0,"scores":[null,0.5,0.1]},{"layer":0,"head":1,"scores":[0.9,null,0]}]}
{"step":30,"roles":["induction","previous-token","self"],"heads":[{"layer":0,"head":0,"scores":[null,0.7,0.1]},{"layer":0,"head":1,"scores":[0.95,null,0]}]}
{"step":40,"roles":["induction","previous-token","self"],"heads":[{"layer":0,"head":0,"scores":[null,0.`
	r, err := ReadLogs(writeRun(t, metrics, roles))
	if err != nil {
		t.Fatal(err)
	}
	if want := []TrainRecord{{Step: 10, Loss: 3.2, LR: 0.01}, {Step: 20, Loss: 0.5, LR: 0.01}}; !reflect.DeepEqual(r.Train, want) {
		t.Errorf("train %v, want %v", r.Train, want)
	}
	if want := []EvalRecord{{Step: 10, EvalLoss: 3.1, TokenAcc: 0.1}, {Step: 20, EvalLoss: 0.4, TokenAcc: 0.9, SeqAcc: 0.5}}; !reflect.DeepEqual(r.Eval, want) {
		t.Errorf("eval %v, want %v", r.Eval, want)
	}
	if want := []EvalRecord{{Step: 20, EvalLength: 16, EvalLoss: 2.5, TokenAcc: 0.3}}; !reflect.DeepEqual(r.AtLength, want) {
		t.Errorf("evaluations at other lengths %v, want %v", r.AtLength, want)
	}
	thirty, twenty := 30, 20
	want := [][]HeadHistory{{
		{Layer: 0, Head: 0, Role: "previous-token", Formed: &thirty, Steps: []int{10, 20, 30}, Scores: []float64{0.1, 0.5, 0.7}},
		{Layer: 0, Head: 1, Role: "induction", Formed: &twenty, Steps: []int{10, 20, 30}, Scores: []float64{0, 0.9, 0.95}},
	}}
	if !reflect.DeepEqual(r.Heads, want) {
		t.Errorf("heads %+v, want %+v", r.Heads, want)
	}
}

// TestReadWithoutRoles: a run without roles.jsonl (evaluation off, or
// older runs) has no head histories and no error; a head that never passes
// 0.5 has no formation step.
func TestReadWithoutRoles(t *testing.T) {
	r, err := ReadLogs(writeRun(t, `{"step":1,"loss":1}`+"\n", ""))
	if err != nil || len(r.Train) != 1 || r.Heads != nil {
		t.Fatalf("%+v %v", r, err)
	}
	r, err = ReadLogs(writeRun(t, "", `{"step":5,"roles":["self"],"heads":[{"layer":0,"head":0,"scores":[0.3]}]}`+"\n"))
	if err != nil || len(r.Heads) != 1 || r.Heads[0][0].Role != "self" || r.Heads[0][0].Formed != nil {
		t.Fatalf("%+v %v", r, err)
	}
}

// TestReadErrors: each bad input is one error naming the file and what is
// wrong with it.
func TestReadErrors(t *testing.T) {
	for _, c := range []struct{ name, metrics, roles, want string }{
		{"not JSON", "{\"step\":1,\"loss\":1}\nnot json\n", "", "metrics.jsonl line 2 is not a metrics record: invalid character"},
		{"roles not JSON", "", "{\"step\":1,\"roles\":[],\"heads\":[{\"layer\":0,\"head\":0,\"scores\":[]}]}\n[1]\n", "roles.jsonl line 2 is not a head roles record: json: cannot unmarshal array"},
		{"no step", "{\"loss\":1}\n", "", "metrics.jsonl line 1 is not a metrics record: no step"},
		{"other shape", "", "{\"step\":1,\"roles\":[],\"heads\":[{\"layer\":0,\"head\":0,\"scores\":[]}]}\n{\"step\":2,\"roles\":[],\"heads\":[{\"layer\":0,\"head\":0,\"scores\":[]},{\"layer\":0,\"head\":1,\"scores\":[]}]}\n", "roles.jsonl line 2 is not a head roles record: a different number of layers or heads than the first line"},
		{"other shape, older lines", "", "{\"step\":1,\"heads\":[[{}]]}\n{\"step\":2,\"heads\":[[{},{}]]}\n", "roles.jsonl line 2 is not a head roles record: a different number of layers or heads than the first line"},
	} {
		_, err := ReadLogs(writeRun(t, c.metrics, c.roles))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", c.name, err, c.want)
		}
	}
	if _, err := ReadLogs(t.TempDir()); err == nil || !strings.Contains(err.Error(), "metrics.jsonl: no such file") {
		t.Errorf("a directory without metrics.jsonl: %v", err)
	}
}

// TestStepsMustIncrease: a log whose steps leave the first-to-last order (a
// stray step far ahead, a descending log, a repeated evaluation, a roles
// line going back) is refused naming the steps; lines of other kinds and
// evaluations at other lengths may share a step.
func TestStepsMustIncrease(t *testing.T) {
	for _, c := range []struct{ name, metrics, roles, want string }{
		{"stray step", `{"step":1,"loss":1,"lr":0}` + "\n" + `{"step":1000000000,"loss":1,"lr":0}` + "\n" + `{"step":2,"loss":1,"lr":0}` + "\n", "", "step 2 after step 1000000000"},
		{"descending", `{"step":11,"loss":1,"lr":0}` + "\n" + `{"step":10,"loss":1,"lr":0}` + "\n", "", "step 10 after step 11"},
		{"evaluation twice", `{"step":10,"eval_loss":1,"token_acc":0,"seq_acc":0}` + "\n" + `{"step":10,"eval_loss":1,"token_acc":0,"seq_acc":0}` + "\n", "", "step 10 after step 10"},
		{"roles back", `{"step":10,"loss":1,"lr":0}` + "\n", rolesSelf(10, 1) + rolesSelf(5, 1), "step 5 after step 10"},
	} {
		_, err := ReadLogs(writeRun(t, c.metrics, c.roles))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line containing %q", c.name, err, c.want)
		}
	}
	ok := `{"step":10,"loss":1,"lr":0}` + "\n" + `{"step":10,"eval_loss":1,"token_acc":0,"seq_acc":0}` + "\n" +
		`{"step":10,"eval_length":12,"eval_loss":2,"token_acc":0,"seq_acc":0}` + "\n" + `{"step":10,"eval_length":16,"eval_loss":3,"token_acc":0,"seq_acc":0}` + "\n"
	if _, err := ReadLogs(writeRun(t, ok, "")); err != nil {
		t.Errorf("a training line, an evaluation and two lengths at one step: %v", err)
	}
}
