package train

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pkg/errors"
)

// TestConfigsLoad loads every example in configs/ and checks it survives the
// YAML round trip.
func TestConfigsLoad(t *testing.T) {
	paths, err := filepath.Glob("../configs/*.yaml")
	if err != nil || len(paths) < 4 {
		t.Fatalf("found %d configs (%v), want at least 4", len(paths), err)
	}
	for _, path := range paths {
		cfg, err := LoadConfig(path, nil)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		roundTrip(t, path, cfg)
	}
}

func roundTrip(t *testing.T, name string, cfg Config) {
	t.Helper()
	src, err := cfg.YAML()
	if err != nil {
		t.Fatalf("%s: YAML: %v", name, err)
	}
	back, err := ParseConfig(name+" (rendered)", src, nil)
	if err != nil {
		t.Fatalf("%s: re-parsing the rendered config: %v\n%s", name, err, src)
	}
	if back != cfg {
		t.Fatalf("%s: round trip changed the config:\n got %+v\nwant %+v", name, back, cfg)
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	if _, err := LoadConfig(path, nil); !os.IsNotExist(errors.Cause(err)) {
		t.Fatalf("LoadConfig(missing) = %v, want a not-exist error", err)
	}
}
