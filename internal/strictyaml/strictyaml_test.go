package strictyaml

import (
	"strings"
	"testing"

	"github.com/pkg/errors"
	"go.yaml.in/yaml/v3"
)

// TestPositionCountsLikeYAML checks position, which turns a byte offset into
// the line and column of a syntax error, against the positions yaml.v3 gives
// the nodes it parses, across every line break YAML knows, multi-byte
// characters and a byte order mark.
func TestPositionCountsLikeYAML(t *testing.T) {
	src := "\uFEFFa: 1\r\nbé: [x, ψy]\rc: 'z'\u0085d: {e: f}\u2028g: 2\u2029h: 3\n  # ü\ni: 4\n"
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	checked := 0
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode {
			// Each scalar's text occurs once in src, after the BOM; a
			// quoted scalar starts at its quote.
			text := n.Value
			if n.Style == yaml.SingleQuotedStyle {
				text = "'" + text + "'"
			}
			i := strings.Index(src[3:], text) + 3
			if line, column := position([]byte(src), i); line != n.Line || column != n.Column {
				t.Errorf("scalar %q at byte %d: position says %d:%d, yaml.v3 %d:%d", n.Value, i, line, column, n.Line, n.Column)
			}
			checked++
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&doc)
	if checked != 16 {
		t.Errorf("checked %d scalars, want 16", checked)
	}
}

// sample is a small struct with every field kind Decoder handles.
type sample struct {
	Name  string  `yaml:"name"`
	Count int     `yaml:"count"`
	Seed  uint64  `yaml:"seed"`
	Rate  float64 `yaml:"rate"`
	On    bool    `yaml:"on"`
	Inner struct {
		Size  int `yaml:"size"`
		Fixed int `yaml:"-"`
	} `yaml:"inner"`
}

// TestDecoder decodes into sample, independently of any run config: values
// land in their fields over the defaults, -set overrides a nested key, and
// each mistake gets the one-line message pinned here (position, dotted key,
// value as written, what is allowed).
func TestDecoder(t *testing.T) {
	dec := Decoder{Fixed: map[string]string{"inner.fixed": "it is derived"}}
	var s sample
	s.Rate = 0.5
	if err := dec.File(&s, "s.yaml", []byte("name: x\ncount: 3\nseed: 7\non: true\ninner: {size: 2}\n")); err != nil {
		t.Fatal(err)
	}
	if err := dec.Set(&s, "inner.size=5"); err != nil {
		t.Fatal(err)
	}
	if s.Name != "x" || s.Count != 3 || s.Seed != 7 || s.Rate != 0.5 || !s.On || s.Inner.Size != 5 {
		t.Fatalf("decoded %+v", s)
	}
	cases := []struct{ src, set, want string }{
		{"count: 2.5\n", "", "s.yaml:1:8: count = 2.5: want an integer"},
		{"seed: -1\n", "", "s.yaml:1:7: seed = -1: want an integer >= 0"},
		{"on: yes please\n", "", `s.yaml:1:5: on = "yes please": want true or false`},
		{"rate: [1]\n", "", "s.yaml:1:7: rate: want a number, got a list"},
		{"nme: x\n", "", "s.yaml:1:1: unknown key nme (allowed: name, count, seed, rate, on, inner); did you mean name?"},
		{"count: 1\ncount: 2\n", "", "s.yaml:2:1: duplicate key count (first set at line 1)"},
		{"inner: 3\n", "", "s.yaml:1:8: inner: want a mapping with keys size, got a value"},
		{"inner:\n  fixed: 1\n", "", "s.yaml:2:3: inner.fixed cannot be set: it is derived"},
		{"", "", "s.yaml: empty config"},
		{"a: b: c\n", "", "s.yaml:1:5: YAML syntax: mapping values are not allowed in this context"},
		{"count: 1\n", "inner.size", "-set inner.size: want key=value"},
		{"count: 1\n", "inner.size.x=1", "-set inner.size.x=1: unknown key inner.size.x (inner.size is not a section)"},
		{"count: 1\n", "count=[", "-set count=[: YAML syntax: did not find expected node content"},
	}
	for _, c := range cases {
		var s sample
		err := dec.File(&s, "s.yaml", []byte(c.src))
		if c.set != "" {
			if err != nil {
				t.Fatalf("%q: %v", c.src, err)
			}
			err = dec.Set(&s, c.set)
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("%q %q: error %v\nwant %s", c.src, c.set, err, c.want)
		}
	}
	if err := dec.Set(&s, "na\nme=1"); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("a -set key with a newline: error %q, want one line", err)
	}
}

// evens is a List: a YAML list of even ints, held as their count.
type evens int

func (e *evens) DecodeList(n *yaml.Node) error {
	var list []int
	if err := n.Decode(&list); err != nil {
		return err
	}
	for _, x := range list {
		if x%2 != 0 {
			return errors.New("odd")
		}
	}
	*e = evens(len(list))
	return nil
}

func (e *evens) Want() string { return "want a list of even ints" }

// TestListField: a List field decodes itself from a YAML list, and a
// scalar or a list it refuses is an error naming the key and what it
// wants.
func TestListField(t *testing.T) {
	type cfg struct {
		E evens `yaml:"e"`
	}
	var c cfg
	if err := (Decoder{}).File(&c, "x.yaml", []byte("e: [2, 4, 6]\n")); err != nil || c.E != 3 {
		t.Fatalf("decoded %d, %v; want 3, nil", c.E, err)
	}
	for src, want := range map[string]string{
		"e: 2\n":      "x.yaml:1:4: e: want a list of even ints, got a value",
		"e: [2, 3]\n": "x.yaml:1:4: e: want a list of even ints",
	} {
		if err := (Decoder{}).File(&c, "x.yaml", []byte(src)); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}
