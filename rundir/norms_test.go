package rundir

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/model"
)

// TestNormsKeys: the norms keys read from YAML, round trip through YAML
// and JSON, and are absent from a config that does not set them; a bad
// value is refused with the file's line and column.
func TestNormsKeys(t *testing.T) {
	cfg, err := ParseConfig("x.yaml", []byte(`
task: {name: copy, length: 8, symbols: 16}
model: {d_model: 16, heads: 2, layers: 1, mlp: true, norm: rmsnorm, norm_placement: sandwich, norm_offset: true,
        qk_norm: true, qk_norm_scope: all}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.Model; m.PlacementKind() != model.PlacementSandwich || !m.NormOffset || m.QKScope() != model.QKScopeAll {
		t.Fatalf("norms keys not read: %+v", m)
	}
	roundTrip(t, "norms", cfg)
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := fromJSON(raw); err != nil || !reflect.DeepEqual(back, cfg) {
		t.Fatalf("JSON round trip: %v, %+v", err, back.Model)
	}
	plain, err := ParseConfig("x.yaml", []byte("model: {mlp: true, parallel_residual: true}\n"), nil)
	if err != nil || !plain.Model.ParallelResidual {
		t.Fatalf("parallel_residual: %v, %+v", err, plain.Model)
	}
	if raw, err = json.Marshal(plain); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"norm_placement", "norm_offset", "qk_norm_scope"} {
		if strings.Contains(string(raw), `"`+key+`"`) {
			t.Errorf("a config that does not set %s writes it: %s", key, raw)
		}
	}
	_, err = ParseConfig("x.yaml", []byte("model: {mlp: true, norm_placement: postnorm}\n"), nil)
	if err == nil || !strings.Contains(err.Error(), `model.norm_placement = "postnorm": want one of pre, sandwich, post; did you mean post?`) {
		t.Errorf("a bad placement: %v", err)
	}
}
