package layout

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The standing size rules: no non-test Go file over maxFileLines lines,
// and the inspect command, which only parses flags and calls the library,
// within maxInspectLines of non-test code.
const (
	maxFileLines    = 600
	maxInspectLines = 900
)

// TestSizeRules holds every non-test Go file of the project's directories
// to maxFileLines and cmd/inspect's non-test files together to
// maxInspectLines. A top-level directory of no package docs/design.md lists
// (a user's own program) is not the project's and is left alone.
func TestSizeRules(t *testing.T) {
	roots := projectRoots(drawn(t))
	var files, inspect int
	err := filepath.WalkDir("../..", func(path string, e fs.DirEntry, err error) error {
		if err != nil || path == "../.." {
			return err
		}
		name := strings.TrimPrefix(filepath.ToSlash(path), "../../")
		if e.IsDir() && (!roots[topDir(name)] || strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata" || e.Name() == "runs") {
			return filepath.SkipDir
		}
		if e.IsDir() || !roots[topDir(name)] || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines := bytes.Count(src, []byte("\n"))
		files++
		if lines > maxFileLines {
			t.Errorf("%s has %d lines, more than the %d a file may have: split it by what its parts do", name, lines, maxFileLines)
		}
		if filepath.Dir(name) == "cmd/inspect" {
			inspect += lines
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("found %d Go files under the repository root, too few: the walk missed the tree", files)
	}
	if inspect > maxInspectLines {
		t.Errorf("cmd/inspect has %d lines of non-test code, more than %d: move what is not flag parsing into the library", inspect, maxInspectLines)
	}
	t.Logf("%d non-test files; cmd/inspect %d lines", files, inspect)
}
