package layout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
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
		got[strings.TrimSuffix(strings.TrimPrefix(p.ImportPath+"/", module), "/")] = own
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
// the project with exactly the module packages it imports, and no package
// under internal/ imports one outside it. A package in a top-level
// directory of its own (a user's program, where the README puts it) is not
// the project's and is left alone.
func TestDesignDrawsTheImports(t *testing.T) {
	problems, theirs := checkLayout(imports(t), drawn(t))
	for _, p := range problems {
		t.Error(p)
	}
	if len(theirs) > 0 {
		t.Logf("not the project's, left alone: %s", strings.Join(theirs, ", "))
	}
}

// TestLayoutLeavesUserCodeAlone: a user's package main in a directory of
// its own, at the root or deeper, and one at the module root are not
// checked, while a project directory's package that docs/design.md does not
// list, or lists with other imports, still fails.
func TestLayoutLeavesUserCodeAlone(t *testing.T) {
	doc := map[string][]string{"model": nil, "open": {"model"}, "cmd/inspect": {"open"}, "internal/msg": nil}
	got := map[string][]string{
		"model": nil, "open": {"model"}, "cmd/inspect": {"open"}, "internal/msg": nil,
		"walkexample": {"open", "model"}, "mine/tools/walk": {"open"}, "": {"model"},
		"open/newformat": {"model"}, "cmd/walk": {"open"}, "internal/extra": {"model"},
	}
	problems, theirs := checkLayout(got, doc)
	want := []string{
		`docs/design.md does not list cmd/walk (it imports ["open"]): it is in cmd/, a directory of the project; a program of your own goes in a top-level directory of its own (README: Your own code)`,
		`docs/design.md does not list internal/extra (it imports ["model"]): it is in internal/, a directory of the project; a program of your own goes in a top-level directory of its own (README: Your own code)`,
		`docs/design.md does not list open/newformat (it imports ["model"]): it is in open/, a directory of the project; a program of your own goes in a top-level directory of its own (README: Your own code)`,
		"internal/extra imports model: internal/ imports nothing of the domain",
	}
	if !slices.Equal(problems, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
	if wantTheirs := []string{"(the module root)", "mine/tools/walk", "walkexample"}; !slices.Equal(theirs, wantTheirs) {
		t.Errorf("left alone %q, want %q", theirs, wantTheirs)
	}
	got["open"] = []string{"internal/msg", "model"}
	if problems, _ := checkLayout(got, doc); !slices.Contains(problems, `open imports ["internal/msg" "model"]; docs/design.md says ["model"]`) {
		t.Errorf("a listed package with another import passed: %q", problems)
	}
}

// checkLayout holds the packages go list found (got) to the table of
// docs/design.md (doc): what is wrong, sorted, and the packages it left
// alone because they are not the project's.
func checkLayout(got, doc map[string][]string) (problems, theirs []string) {
	roots := projectRoots(doc)
	for _, pkg := range slices.Sorted(maps.Keys(got)) {
		deps := sorted(got[pkg])
		want, listed := doc[pkg]
		switch {
		case !listed && !roots[topDir(pkg)]:
			theirs = append(theirs, displayName(pkg))
			continue
		case !listed:
			problems = append(problems, fmt.Sprintf("docs/design.md does not list %s (it imports %q): it is in %s/, a directory of the project; "+
				"a program of your own goes in a top-level directory of its own (README: Your own code)", pkg, deps, topDir(pkg)))
		case !slices.Equal(deps, sorted(want)):
			problems = append(problems, fmt.Sprintf("%s imports %q; docs/design.md says %q", pkg, deps, want))
		}
		if strings.HasPrefix(pkg, "internal/") {
			for _, d := range deps {
				if !strings.HasPrefix(d, "internal/") {
					problems = append(problems, fmt.Sprintf("%s imports %s: internal/ imports nothing of the domain", pkg, d))
				}
			}
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(doc)) {
		if _, ok := got[pkg]; !ok {
			problems = append(problems, fmt.Sprintf("docs/design.md lists %s, which is not a package of the module", pkg))
		}
	}
	slices.Sort(problems)
	return problems, theirs
}

// projectRoots is the top-level directory of every package docs/design.md
// lists: the project's own directories. A new package under one of them is
// the project's, and must be listed.
func projectRoots(doc map[string][]string) map[string]bool {
	roots := map[string]bool{}
	for pkg := range doc {
		roots[topDir(pkg)] = true
	}
	return roots
}

// topDir is the first element of a package's path in the module ("" for
// the module root).
func topDir(pkg string) string {
	first, _, _ := strings.Cut(pkg, "/")
	return first
}

func displayName(pkg string) string {
	if pkg == "" {
		return "(the module root)"
	}
	return pkg
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
