package checkpoint

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/msg/msgtest"
	"github.com/attnscope/attnscope/rundir"
)

// TestDecodeConfigJSON: a config as a checkpoint stores it reads back
// equal; the model check a checkpoint's readers apply refuses sizes that
// do not fit the task, and the decoder an unknown key.
func TestDecodeConfigJSON(t *testing.T) {
	cfg, err := rundir.LoadConfig("../configs/sort.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"vocab":17`) || !strings.Contains(string(raw), `"context":16`) {
		t.Errorf("JSON lacks the derived sizes: %s", raw)
	}
	back, err := decodeConfigJSON(raw)
	if err != nil || !reflect.DeepEqual(back, cfg) {
		t.Fatalf("decodeConfigJSON = %+v, %v; want %+v", back, err, cfg)
	}
	bad, err := decodeConfigJSON([]byte(strings.Replace(string(raw), `"vocab":17`, `"vocab":12`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	msgtest.Refusal(t, "inconsistent vocab", bad.ValidateModel(), "model.vocab = 12 does not match the vocabulary of task sort (17)")
	_, err = decodeConfigJSON([]byte(`{"seed": 1, "colour": "red"}`))
	msgtest.Refusal(t, "unknown JSON field", err, "run config", "colour")
}

// TestConfigDuplicateKeys: a checkpoint whose config JSON names a key twice
// (the last would win: a copy model shown as reverse) is refused, at the
// top level and inside a member, and JSON nested past the bound is refused
// before it is decoded (a million brackets once took all the memory).
func TestConfigDuplicateKeys(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{`{"task":{"name":"copy"},"task":{"name":"reverse"},"model":{}}`, `key "task" appears twice in the config`},
		{`{"model":{"heads":2,"heads":4}}`, `key "heads" appears twice in the config.model`},
		{`{"task":{"file":{"path":"a","path":"b"}}}`, `key "path" appears twice in the config.task.file`},
		{`{"train":{"eval_lengths":[1,2]},"x":[{"a":1,"a":2}]}`, `key "a" appears twice in the config.x[]`},
		{`{"task":{"file":{"path":[[[[[[1]]]]]]}}}`, "the config nests deeper than 8 levels"},
	} {
		if _, err := decodeConfigJSON([]byte(c.raw)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.raw, err, c.want)
		}
	}
}
