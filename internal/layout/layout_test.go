package layout

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/attnscope/attnscope/"

// imports is what go list says each package of the module imports of it,
// outside its tests, by path relative to the module.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	got := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		var own []string
		for _, imp := range p.Imports {
			if rel, ok := strings.CutPrefix(imp, module); ok {
				own = append(own, rel)
			}
		}
		got[strings.TrimPrefix(p.ImportPath, module)] = own
	}
	return got
}

// drawn is the table between <!-- imports --> and <!-- /imports --> in
// docs/design.md.
func drawn(t *testing.T) map[string][]string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "<!-- imports -->")
	table, _, ok2 := strings.Cut(rest, "<!-- /imports -->")
	if !ok || !ok2 {
		t.Fatal("docs/design.md has no <!-- imports --> table")
	}
	name := regexp.MustCompile("`([^`]+)`")
	out := map[string][]string{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[1], "`") {
			continue
		}
		pkg := name.FindStringSubmatch(cells[1])[1]
		var deps []string
		for _, m := range name.FindAllStringSubmatch(cells[2], -1) {
			deps = append(deps, m[1])
		}
		if _, dup := out[pkg]; dup {
			t.Errorf("docs/design.md lists %s twice", pkg)
		}
		out[pkg] = deps
	}
	return out
}

// TestDesignDrawsTheImports: docs/design.md's table lists every package of
// the module with exactly the module packages it imports, and no package
// under internal/ imports one outside it.
func TestDesignDrawsTheImports(t *testing.T) {
	got, doc := imports(t), drawn(t)
	for pkg, deps := range got {
		slices.Sort(deps)
		want, ok := doc[pkg]
		switch {
		case !ok:
			t.Errorf("docs/design.md does not list %s (it imports %q)", pkg, deps)
		case !slices.Equal(deps, sorted(want)):
			t.Errorf("%s imports %q; docs/design.md says %q", pkg, deps, want)
		}
		if strings.HasPrefix(pkg, "internal/") {
			for _, d := range deps {
				if !strings.HasPrefix(d, "internal/") {
					t.Errorf("%s imports %s: internal/ imports nothing of the domain", pkg, d)
				}
			}
		}
	}
	for pkg := range doc {
		if _, ok := got[pkg]; !ok {
			t.Errorf("docs/design.md lists %s, which is not a package of the module", pkg)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
