package main

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/internal/safetensors"
)

// snakeKey is the one style of a key in every JSON the lab writes.
var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// checkKeys fails on any key of doc, at any depth, that is not snake_case
// or that is the name of a thing (a role, a number such as a token id or a
// head): names are values in records, never keys.
func checkKeys(t *testing.T, what string, doc []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, child := range x {
				_, number := strconv.Atoi(k)
				if !snakeKey.MatchString(k) || number == nil || slices.Contains(heads.Patterns, heads.Pattern(k)) {
					t.Errorf("%s: key %q at %s", what, k, path)
				}
				walk(path+"."+k, child)
			}
		case []any:
			for _, child := range x {
				walk(path+"[]", child)
			}
		}
	}
	walk("$", v)
}

// TestJSONStyle: every JSON inspect writes for the committed induction run
// (-json with every analysis, -run -json, the page's data) and the run
// config a checkpoint carries use snake_case keys and never a name as a
// key. (The run directory's logs are checked where train writes them:
// train.TestLogKeysSnakeCase.)
func TestJSONStyle(t *testing.T) {
	run := "../../testdata/induction"
	checkKeys(t, "inspect -json -circuits -ablate", runOK(t, "-checkpoint", run, "-json", "-circuits", "-ablate", "-examples", "8"))
	checkKeys(t, "inspect -run -json", runOK(t, "-run", run, "-json"))
	checkKeys(t, "the -html page's data", blob(t, writePage(t, "-checkpoint", run, "-examples", "8", "-circuits", "-ablate")))
	f, err := safetensors.Open(run+"/checkpoint.safetensors", 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	checkKeys(t, "the checkpoint's run config", []byte(f.Metadata()["config"]))
}
