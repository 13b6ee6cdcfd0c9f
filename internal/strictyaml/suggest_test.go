package strictyaml

import (
	"reflect"
	"strings"
	"testing"
)

type suggestSample struct {
	Seed  int `yaml:"seed"`
	Model struct {
		Heads  int `yaml:"heads"`
		Layers int `yaml:"layers,omitempty"`
	} `yaml:"model"`
	Skip int `yaml:"-"`
}

// TestUnknownKeySuggestion: a key one slip away from a real one names it,
// from the file and from -set; a key unlike any names nothing.
func TestUnknownKeySuggestion(t *testing.T) {
	var dst suggestSample
	d := Decoder{}
	if err := d.Set(&dst, "model.hedas=8"); err == nil || !strings.HasSuffix(err.Error(), "; did you mean model.heads?") {
		t.Errorf("-set model.hedas: %v", err)
	}
	if err := d.File(&dst, "x.yaml", []byte("model:\n  layrs: 2\n")); err == nil || !strings.HasSuffix(err.Error(), "; did you mean model.layers?") {
		t.Errorf("layrs in a file: %v", err)
	}
	if err := d.Set(&dst, "model.zzzzzz=8"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("-set model.zzzzzz: %v", err)
	}
}

// TestPaths lists the dotted leaf keys, options and "-" fields left out.
func TestPaths(t *testing.T) {
	if got, want := Paths(&suggestSample{}), []string{"seed", "model.heads", "model.layers"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Paths = %v, want %v", got, want)
	}
}
