package runlog

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/heads"
)

// committedRun is the run every command's tests open; its roles.jsonl and
// circuits.jsonl are in the older shape, and stay so.
const committedRun = "../testdata/induction"

// roleGrid is a [layer][head] grid of role scores.
type roleGrid = [][]map[heads.Pattern]float64

func icl(v float64) *float64 { return &v }

// rtRoles are roles records to round-trip: heads without a score of some
// role (matching-bracket off a text task), a role package heads may add
// later, one layer, none.
var rtRoles = []RolesRecord{
	{Step: 6, Heads: roleGrid{{{"self": 0.25, "induction": 1.0 / 3}, {"self": 0, "induction": 1e-300}}, {{"self": 1, "induction": 0.5}, {"self": 0.125, "induction": 0.75}}}},
	{Step: 12, Heads: roleGrid{{{"self": 0.5}, {"self": 0.5, "matching-bracket": 0.25}}, {{"self": 0.5, "some-new-role": 0.5}, {}}}},
	{Step: 18, Heads: roleGrid{{{"previous-token": 0.9}}}},
}

// rtCircuits are circuits records to round-trip: with prefix matching and
// an ICL score, without prefix matching (a context under 4), without ICL.
var rtCircuits = []CircuitsRecord{
	{Step: 6, PrefixMatching: [][]float64{{0.25, 1.0 / 3}, {0, 1}}, Copying: [][]float64{{-1, 0.5}, {1e-300, 0.75}}, ICL: icl(-1.5)},
	{Step: 12, Copying: [][]float64{{0.5, 0.25}, {0.125, 1}}, ICL: icl(0)},
	{Step: 18, PrefixMatching: [][]float64{{0.5}}, Copying: [][]float64{{0.25}}},
}

// TestRolesAndCircuitsRoundTrip: what Log writes to roles.jsonl and
// circuits.jsonl reads back equal, record by record.
func TestRolesAndCircuitsRoundTrip(t *testing.T) {
	for i, rec := range rtRoles {
		checkRoundTrip(t, fmt.Sprintf("roles record %d", i), RolesFile, rec, readRoles)
	}
	for i, rec := range rtCircuits {
		checkRoundTrip(t, fmt.Sprintf("circuits record %d", i), CircuitsFile, rec, readCircuits)
	}
}

// checkRoundTrip writes rec as the one line of the log file of a new run
// directory and checks that read gives it back, equal.
func checkRoundTrip[T Record](t *testing.T, what, file string, rec T, read func(dir string) ([]T, error)) {
	t.Helper()
	dir := t.TempDir()
	writeLog(t, filepath.Join(dir, file), rec).Close()
	got, err := read(dir)
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], rec) {
		t.Errorf("%s: read %+v (%v), wrote %+v", what, got, err, rec)
	}
}

// shapePairs are the same records as lines of the shape written now and of
// the older shape, in which the roles were keys and the heads grids.
var shapePairs = []struct {
	file, now, older string
	rec              Record
}{
	{
		RolesFile,
		`{"step":6,"roles":["induction","self"],"heads":[{"layer":0,"head":0,"scores":[0.5,0.25]},{"layer":0,"head":1,"scores":[null,1]},{"layer":1,"head":0,"scores":[0,0.125]},{"layer":1,"head":1,"scores":[0.75,0]}]}`,
		`{"step":6,"heads":[[{"induction":0.5,"self":0.25},{"self":1}],[{"induction":0,"self":0.125},{"induction":0.75,"self":0}]]}`,
		RolesRecord{Step: 6, Heads: roleGrid{{{"induction": 0.5, "self": 0.25}, {"self": 1}}, {{"induction": 0, "self": 0.125}, {"induction": 0.75, "self": 0}}}},
	},
	{
		CircuitsFile,
		`{"step":6,"heads":[{"layer":0,"head":0,"prefix_matching":0.25,"copying":-1},{"layer":0,"head":1,"prefix_matching":0.5,"copying":0.5},{"layer":1,"head":0,"prefix_matching":0,"copying":1}],"icl":-1.5}`,
		`{"step":6,"prefix_matching":[[0.25,0.5],[0]],"copying":[[-1,0.5],[1]],"icl":-1.5}`,
		CircuitsRecord{Step: 6, PrefixMatching: [][]float64{{0.25, 0.5}, {0}}, Copying: [][]float64{{-1, 0.5}, {1}}, ICL: icl(-1.5)},
	},
	{
		CircuitsFile,
		`{"step":6,"heads":[{"layer":0,"head":0,"copying":0.5}]}`,
		`{"step":6,"copying":[[0.5]]}`,
		CircuitsRecord{Step: 6, Copying: [][]float64{{0.5}}},
	},
}

// TestShapes: a record is written exactly as the line of the shape written
// now (the one docs/usage.md shows), and that line and the older shape's
// read to the same record.
func TestShapes(t *testing.T) {
	for _, c := range shapePairs {
		line, err := json.Marshal(c.rec)
		if err != nil || string(line) != c.now {
			t.Errorf("%s: wrote %s (%v), want %s", c.file, line, err, c.now)
		}
		for _, text := range []string{c.now, c.older} {
			got := reflect.New(reflect.TypeOf(c.rec))
			if err := json.Unmarshal([]byte(text), got.Interface()); err != nil || !reflect.DeepEqual(got.Elem().Interface(), c.rec) {
				t.Errorf("%s: %s read as %+v (%v), want %+v", c.file, text, got.Elem().Interface(), err, c.rec)
			}
		}
	}
}

// TestCommittedRunReads: the committed run, whose roles.jsonl and
// circuits.jsonl are in the older shape, reads whole; its first lines hold
// what their JSON says, and every line written again in the shape of now
// reads back to the same record. The two logs of now take no more bytes
// than the older ones: roles.jsonl, names once a line, shrinks by more
// than circuits.jsonl, a record a head, grows.
func TestCommittedRunReads(t *testing.T) {
	r, err := ReadLogs(committedRun)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Heads) != 2 || len(r.Heads[0]) != 4 || len(r.Heads[0][0].Steps) != 60 || len(r.Circuits) != 60 || len(r.Eval) != 60 {
		t.Fatalf("%d layers, %d heads, %d role steps, %d circuits lines, %d evaluations; want 2, 4, 60, 60, 60",
			len(r.Heads), len(r.Heads[0]), len(r.Heads[0][0].Steps), len(r.Circuits), len(r.Eval))
	}
	roles, err := readRoles(committedRun)
	if err != nil {
		t.Fatal(err)
	}
	var first struct {
		Heads [][]map[string]float64 `json:"heads"`
	}
	firstLine(t, filepath.Join(committedRun, RolesFile), &first)
	if got := roles[0].Heads[1][2]; len(got) != len(first.Heads[1][2]) || got[heads.Induction] != first.Heads[1][2]["induction"] || got[heads.Induction] == 0 {
		t.Errorf("layer 1 head 2 of the first line read as %v, the file holds %v", got, first.Heads[1][2])
	}
	var firstCircuits struct {
		Copying [][]float64 `json:"copying"`
	}
	firstLine(t, filepath.Join(committedRun, CircuitsFile), &firstCircuits)
	if !reflect.DeepEqual(r.Circuits[0].Copying, firstCircuits.Copying) || r.Circuits[0].ICL == nil || len(r.Circuits[0].PrefixMatching) != 2 {
		t.Errorf("the first circuits line read as %+v, the file's copying %v", r.Circuits[0], firstCircuits.Copying)
	}
	var older, now int64
	for _, c := range []struct {
		file string
		recs []Record
		read func(dir string) (any, error)
	}{
		{RolesFile, records(roles), func(dir string) (any, error) { return readRoles(dir) }},
		{CircuitsFile, records(r.Circuits), func(dir string) (any, error) { return readCircuits(dir) }},
	} {
		dir := t.TempDir()
		writeLog(t, filepath.Join(dir, c.file), c.recs...).Close()
		again, err := c.read(dir)
		was, _ := c.read(committedRun)
		if err != nil || !reflect.DeepEqual(again, was) {
			t.Errorf("%s written again reads otherwise (%v)", c.file, err)
		}
		older += fileSize(t, filepath.Join(committedRun, c.file))
		now += fileSize(t, filepath.Join(dir, c.file))
	}
	if now > older {
		t.Errorf("the logs take %d bytes in the shape of now, %d in the older", now, older)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// records lists recs as Records.
func records[T Record](recs []T) []Record {
	out := make([]Record, len(recs))
	for i, rec := range recs {
		out[i] = rec
	}
	return out
}

// firstLine decodes the first line of the file at path into v.
func firstLine(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	if err := json.Unmarshal([]byte(line), v); err != nil {
		t.Fatal(err)
	}
}

// TestResumedOlderRun: a run written before, resumed now, holds lines of
// both shapes in one log; they read as one log.
func TestResumedOlderRun(t *testing.T) {
	dir := writeRun(t, `{"step":1,"loss":1}`+"\n",
		`{"step":5,"heads":[[{"self":0.3}]]}`+"\n"+rolesSelf(10, 0.7))
	if err := os.WriteFile(filepath.Join(dir, CircuitsFile), []byte(shapePairs[2].older+"\n"+strings.Replace(shapePairs[2].now, `"step":6`, `"step":7`, 1)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ReadLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Heads[0][0]; h.Role != heads.Self || !reflect.DeepEqual(h.Scores, []float64{0.3, 0.7}) || h.Formed == nil || *h.Formed != 10 {
		t.Errorf("the head through both shapes: %+v", h)
	}
	if len(r.Circuits) != 2 || r.Circuits[1].Step != 7 || !reflect.DeepEqual(r.Circuits[0].Copying, r.Circuits[1].Copying) {
		t.Errorf("circuits through both shapes: %+v", r.Circuits)
	}
}

// TestShapeErrors: a line of the shape of now that no run writes is
// refused, one line naming the file, the line and the fault.
func TestShapeErrors(t *testing.T) {
	for _, c := range []struct{ name, file, line, want string }{
		{"scores short", RolesFile, `{"step":1,"roles":["a","b"],"heads":[{"layer":0,"head":0,"scores":[1]}]}`, "roles.jsonl line 1 is not a head roles record: layer 0 head 0 has 1 scores for 2 roles"},
		{"role twice", RolesFile, `{"step":1,"roles":["a","a"],"heads":[{"layer":0,"head":0,"scores":[1,1]}]}`, `role "a" is listed twice`},
		{"head skipped", RolesFile, `{"step":1,"roles":[],"heads":[{"layer":0,"head":0,"scores":[]},{"layer":0,"head":2,"scores":[]}]}`, "head record (layer 0, head 2) out of order: want layer 0 head 1 next"},
		{"layer skipped", CircuitsFile, `{"step":1,"heads":[{"layer":0,"head":0,"copying":1},{"layer":2,"head":0,"copying":1}]}`, "circuits.jsonl line 1 is not a circuits record: head record (layer 2, head 0) out of order"},
		{"not from head 0", CircuitsFile, `{"step":1,"heads":[{"layer":0,"head":1,"copying":1}]}`, "head record (layer 0, head 1) out of order: want layer 0 head 0 next"},
		{"prefix on some heads", CircuitsFile, `{"step":1,"heads":[{"layer":0,"head":0,"copying":1,"prefix_matching":0.5},{"layer":0,"head":1,"copying":1}]}`, "prefix_matching on 1 of 2 heads"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var err error
		if c.file == RolesFile {
			_, err = readRoles(dir)
		} else {
			_, err = readCircuits(dir)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", c.name, err, c.want)
		}
	}
}

// TestLogLimitsHoldTheLongestLines: a line of each log with the longest
// numbers Go writes and the largest step, of a model of one head and of 256
// heads, with a score of every role and of one more, fits in the limit of a
// run of one line, in both shapes: resume never refuses a log a run wrote.
func TestLogLimitsHoldTheLongestLines(t *testing.T) {
	const worst = -1.2345678901234567e-300
	// The longest step an int holds: more digits than the largest a run
	// takes (rundir.MaxSteps), which this package does not know.
	const maxStep = math.MaxInt
	for _, size := range [][2]int{{1, 1}, {16, 16}} {
		layers, perLayer := size[0], size[1]
		roles := make(roleGrid, layers)
		grid := make([][]float64, layers)
		for l := range roles {
			for range perLayer {
				scores := map[heads.Pattern]float64{"a-role-of-twenty-chs": worst}
				for _, p := range heads.Patterns {
					scores[p] = worst
				}
				roles[l] = append(roles[l], scores)
				grid[l] = append(grid[l], worst)
			}
		}
		now, _ := json.Marshal(RolesRecord{Step: maxStep, Heads: roles})
		older, _ := json.Marshal(struct {
			Step  int      `json:"step"`
			Heads roleGrid `json:"heads"`
		}{maxStep, roles})
		circuitsNow, _ := json.Marshal(CircuitsRecord{Step: maxStep, PrefixMatching: grid, Copying: grid, ICL: icl(worst)})
		circuitsOlder, _ := json.Marshal(struct {
			Step           int         `json:"step"`
			PrefixMatching [][]float64 `json:"prefix_matching"`
			Copying        [][]float64 `json:"copying"`
			ICL            float64     `json:"icl"`
		}{maxStep, grid, grid, worst})
		train, _ := json.Marshal(TrainRecord{maxStep, worst, worst, worst, worst})
		// A text task gives one language figure, never both.
		eval, _ := json.Marshal(EvalRecord{maxStep, maxStep, worst, worst, worst, icl(worst), icl(worst), icl(worst), nil})
		n := layers * perLayer
		for _, c := range []struct {
			name  string
			bytes int
			limit int64
		}{
			{"roles", len(now) + 1, MaxRolesBytes(0, n)},
			{"older roles", len(older) + 1, MaxRolesBytes(0, n)},
			{"circuits", len(circuitsNow) + 1, MaxCircuitsBytes(0, n)},
			{"older circuits", len(circuitsOlder) + 1, MaxCircuitsBytes(0, n)},
			{"metrics", len(train) + len(eval) + 2, MaxMetricsBytes(0, 0)},
		} {
			if int64(c.bytes) > c.limit {
				t.Errorf("%s of %d heads: a line of %d bytes, over the limit of %d", c.name, n, c.bytes, c.limit)
			}
		}
	}
}
