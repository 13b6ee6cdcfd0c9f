package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/layers"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// TokenNames maps the task's non-numeric labels ("SEP") to their ids, so
// that -tokens accepts what inspect prints.
func TokenNames(task data.Task) map[string]int {
	names := map[string]int{}
	for id := range task.Vocab() {
		if l := task.Label(id); l != strconv.Itoa(id) {
			names[strings.ToUpper(l)] = id
		}
	}
	return names
}

// ParseTokens reads whitespace- or comma-separated decimal ids or token
// names (names, case-insensitive: "SEP"); "" gives nil. Ranges are checked
// against the model later (example); the message quotes at most a few dozen
// bytes of a bad token, so it stays one readable line.
func ParseTokens(s string, names map[string]int) ([]int, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	if len(fields) == 0 {
		if strings.TrimSpace(s) != "" {
			return nil, errors.Errorf("-tokens %s: no token ids", QuoteShort(s))
		}
		return nil, nil
	}
	ids := make([]int, len(fields))
	for i, f := range fields {
		id, err := strconv.Atoi(f)
		if errors.Is(err, strconv.ErrRange) && decimal.MatchString(f) {
			return nil, errors.Errorf("-tokens: %s (token %d) is too large to be a token id", QuoteShort(f), i)
		}
		if named, ok := names[strings.ToUpper(f)]; ok && err != nil {
			id, err = named, nil
		}
		if err != nil {
			return nil, errors.Errorf("-tokens: %s (token %d) is not a number%s", QuoteShort(f), i, orNames(names))
		}
		ids[i] = id
	}
	return ids, nil
}

// orNames is " or a token name (SEP)" for the error of an unknown token,
// each name escaped: a text model's names are its characters, controls and
// bidi overrides among them.
func orNames(names map[string]int) string {
	if len(names) == 0 {
		return ""
	}
	list := make([]string, 0, len(names))
	for name := range names {
		list = append(list, escape.Label(name))
	}
	slices.Sort(list)
	return " or a token name (" + strings.Join(list, ", ") + ")"
}

// decimal matches what strconv.Atoi would read but for its range.
var decimal = regexp.MustCompile(`^[+-]?[0-9]+$`)

// QuoteShort quotes s for a message, cut so that the quoted text is at
// most 42 characters (bytes that are not UTF-8 quote as four: \x82). Go's
// quoting escapes every character escape.Unsafe names, so the result is
// safe on a terminal.
func QuoteShort(s string) string {
	const max = 40
	q := strconv.Quote(s)
	if len(q) <= max+2 {
		return q
	}
	for cut := min(len(s), max); ; cut-- {
		if q := strconv.Quote(s[:cut]); len(q) <= max+2 {
			return q + "..."
		}
	}
}

// TaskOf rebuilds the checkpoint's task from its run config and checks that
// it fits the model.
func TaskOf(runConfig []byte, cfg model.Config) (data.Task, error) {
	var run struct {
		Task *data.TaskConfig `json:"task"`
	}
	if err := json.Unmarshal(runConfig, &run); err != nil {
		return nil, errors.Wrap(err, "metadata config")
	}
	if run.Task == nil {
		return nil, errors.New(`metadata config has no "task" member`)
	}
	task, err := data.New(*run.Task)
	if err != nil {
		return nil, errors.Wrap(err, "metadata config")
	}
	if task.Vocab() != cfg.Vocab || task.SeqLen() > cfg.Context {
		return nil, errors.Errorf("task %s has vocabulary %d and sequence length %d, but the model has vocab %d and context %d",
			task.Name(), task.Vocab(), task.SeqLen(), cfg.Vocab, cfg.Context)
	}
	return task, nil
}

// CheckCheckpointPath catches a run directory given as -checkpoint and
// names the file inside it to use instead.
func CheckCheckpointPath(path string) error {
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return errors.Errorf("checkpoint %s: no such file; train first (%s), or look at a trained model right away: -checkpoint %s",
			path, trainHint(path), ShippedCheckpoint)
	}
	if err == nil && info.Mode().IsRegular() {
		return checkNotConfig(path)
	}
	if err != nil || !info.IsDir() {
		return nil // model.Load reports anything else
	}
	for _, name := range []string{rundir.CheckpointFile, rundir.BestFile} {
		if _, err := os.Stat(filepath.Join(path, name)); err == nil {
			return errors.Errorf("checkpoint %s: is a directory; did you mean -checkpoint %s?", path, filepath.Join(path, name))
		}
	}
	return errors.Errorf("checkpoint %s: is a directory (a run directory holds %s)", path, rundir.CheckpointFile)
}

// ShippedCheckpoint is the trained model the repository ships, for a
// first look before any training (relative to the repository root).
const ShippedCheckpoint = "testdata/induction/checkpoint.safetensors"

// trainHint is the command that writes a missing checkpoint: the config
// named like its run directory when there is one (runs/copy: configs/copy.yaml).
func trainHint(path string) string {
	name := filepath.Base(filepath.Dir(path))
	config := filepath.Join("configs", name+".yaml")
	if _, err := os.Stat(config); err == nil {
		return "go run ./cmd/train -config " + config
	}
	return "go run ./cmd/train -config configs/copy.yaml writes runs/copy"
}

// checkNotConfig refuses a text file given as a checkpoint (a run config, a
// log) before the safetensors reader reads its first bytes as a header
// length.
func checkNotConfig(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // model.Load reports it
	}
	defer f.Close()
	head := make([]byte, 8)
	n, _ := io.ReadFull(f, head)
	for _, c := range head[:n] {
		if c < 0x09 || c > 0x7e {
			return nil // binary: model.Load checks it
		}
	}
	if n == 0 {
		return nil
	}
	if ext := filepath.Ext(path); ext == ".yaml" || ext == ".yml" {
		return errors.Errorf("checkpoint %s: is a run config, not a checkpoint; train from it (go run ./cmd/train -config %s) and inspect the run's checkpoint.safetensors", path, path)
	}
	return errors.Errorf("checkpoint %s: is a text file, not a checkpoint (a .safetensors file written by train, such as %s)", path, ShippedCheckpoint)
}

// ApplyPath puts m on the -path flag's attention path; "" keeps the
// checkpoint's own (its config's model.attention).
func ApplyPath(m *model.Model, flagValue string) error {
	if flagValue == "" {
		return nil
	}
	p, err := layers.ParsePath(flagValue)
	if err != nil {
		return errors.Errorf("-path %s: want %s or %s", msg.Quote(flagValue), layers.Fused, layers.Gorgonia)
	}
	m.Config.Attention = string(p)
	return nil
}
