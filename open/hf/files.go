package hf

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/model"
)

// weightFile is one safetensors file of the model, open, its header read
// and checked.
type weightFile struct {
	name string // in the directory
	path string // as messages name it
	st   *safetensors.File
	// hashed is the file st reads, hashing what it serves, when the
	// directory records digests; nil otherwise.
	hashed *safefile.HashedFile
}

// weights are a model's weight files: model.safetensors alone, or the
// shards the index lists, each tensor in exactly one of them.
type weights struct {
	files []*weightFile
	// lister is the file that says which tensors there are (the single
	// file or the index), named when one is missing.
	lister string
	shape  shape // what the files of the model config.json describes hold
	read   int64 // tensor bytes read of every file so far (Options.Progress)
}

// shape is how many tensors the files of a model can hold, from
// config.json alone: at least one per parameter (or part of one: Llama's
// q_proj, k_proj and v_proj; or parts of several: GPT-NeoX's
// query_key_value, Phi-3's gate_up_proj), at most one per name of the
// architecture's table, every buffer it ignores included. Only those
// buffers may have no elements (a parameter's dimensions are sizes
// config.json gives, all positive), so at most most - least tensors have
// none.
type shape struct {
	least, most int
	describe    string // the architecture and config.json's sizes, for messages
}

// newShape counts the tensors of arch and cfg. Every block has the same
// names, so the counts are linear in the layers: the tables of no layers
// and of one give them, and nothing is built per layer of cfg.
func newShape(arch architecture, cfg model.Config) shape {
	count := func(layers int) (least, most int) {
		c := cfg
		c.Layers = layers
		names := arch.tensors(c)
		return tensorsNeeded(names), len(names)
	}
	least0, most0 := count(0)
	least1, most1 := count(1)
	return shape{
		least:    least0 + cfg.Layers*(least1-least0),
		most:     most0 + cfg.Layers*(most1-most0),
		describe: fmt.Sprintf("the %s of %s (%s)", arch.class, ConfigFile, arch.sizes(cfg)),
	}
}

// tensorsNeeded is the number of tensors the names' parameters take: one
// per slot, but one for all the slots a split tensor fills (several names
// of one slot, as GPT-2's with and without "transformer.", are one).
func tensorsNeeded(names map[string]target) int {
	first := map[slot]bool{}
	for _, t := range names {
		if !t.ignored() {
			first[t.slots()[0]] = true
		}
	}
	return len(first)
}

// countSlack is how far a file's tensor count may be off the model's
// before the count alone refuses it: a file a few tensors off (a layer
// missing, a bias too many) is read on, to be told which tensor is wrong,
// and a hostile count is still refused before anything is built for it.
const countSlack = 64

// bounds are the safetensors bounds of a file that may hold up to n of the
// model's tensors, with countSlack.
func (s shape) bounds(n int) safetensors.Bounds {
	return safetensors.Bounds{Tensors: n + countSlack, ZeroSize: min(n, s.most-s.least) + countSlack}
}

// tooFew reports whether n tensors are too few for the model, by more
// than countSlack.
func (s shape) tooFew(n int) bool { return n+countSlack < s.least }

// limits says what the model's files can hold, for a message.
func (s shape) limits() string {
	return fmt.Sprintf("%s has at most %d tensors, at most %d of them with no elements", s.describe, s.most, s.most-s.least)
}

// sum records in d the digest of each file, of the bytes read, once
// readValues has read them.
func (w *weights) sum(d *modelDir) error {
	for _, f := range w.files {
		if f.hashed == nil {
			continue
		}
		if err := d.noteDigest(f.name, f.hashed); err != nil {
			return err
		}
	}
	return nil
}

func (w *weights) Close() {
	for _, f := range w.files {
		f.st.Close()
	}
}

// tensorCount is the number of tensors in all the files.
func (w *weights) tensorCount() int {
	n := 0
	for _, f := range w.files {
		n += f.st.NumTensors()
	}
	return n
}

// openWeights opens the directory's weight files as transformers would
// choose them: model.safetensors when present, else the index's shards.
func openWeights(d *modelDir, s shape) (*weights, error) {
	switch {
	case d.has(WeightsFile):
		f, err := openWeightFile(d, WeightsFile, s.bounds(s.most), s.limits())
		if err != nil {
			return nil, err
		}
		return &weights{files: []*weightFile{f}, lister: f.path, shape: s}, nil
	case d.has(IndexFile):
		return openShards(d, s)
	case d.has(PickleFile) || d.has(PickleFile+".index.json"):
		return nil, errors.Errorf("%s: holds %s but no %s; a pickle is not read: convert it, e.g. in Python with transformers, "+
			"AutoModelForCausalLM.from_pretrained(%s).save_pretrained(%s) writes %s",
			d.name, PickleFile, WeightsFile, msg.Quote(d.name), msg.Quote(d.name), WeightsFile)
	}
	return nil, errors.Errorf("%s: holds no %s or %s", d.name, WeightsFile, IndexFile)
}

// openWeightFile opens the safetensors file called name in the directory
// and reads its header, refusing one that lists more tensors than bounds
// allow as it is read; limits says what sets them. The file's own
// size bounds what the header may claim, and Load checks the weights
// against MaxBytes before any file is opened, so no size limit of its own
// is needed.
func openWeightFile(d *modelDir, name string, bounds safetensors.Bounds, limits string) (*weightFile, error) {
	if err := d.checkInside(name); err != nil {
		return nil, err
	}
	path := d.path(name)
	if d.digests != nil {
		return openHashedWeights(d, name, bounds, limits)
	}
	st, err := safetensors.OpenBounded(path, math.MaxInt64, bounds)
	if err != nil {
		return nil, headerError(err, d.shown(name), limits)
	}
	info, err := os.Stat(path)
	if err != nil {
		st.Close()
		return nil, errors.Wrapf(unwrapPath(err), "%s", d.shown(name))
	}
	d.noteRead(name, info.Size())
	return &weightFile{name: name, path: d.shown(name), st: st}, nil
}

// openHashedWeights is openWeightFile for a directory that records
// digests: the file is opened once and hashed as it is read, the whole of
// it in the one pass that loads it (safetensors.OpenSource).
func openHashedWeights(d *modelDir, name string, bounds safetensors.Bounds, limits string) (*weightFile, error) {
	path := d.path(name)
	f, err := safefile.OpenHashed(path)
	if err != nil {
		return nil, errors.Wrapf(unwrapPath(err), "%s", d.shown(name))
	}
	st, err := safetensors.OpenSource(f, f.Size(), math.MaxInt64, bounds)
	if err != nil {
		f.Close()
		return nil, headerError(err, d.shown(name), limits)
	}
	d.noteRead(name, f.Size())
	return &weightFile{name: name, path: d.shown(name), st: st, hashed: f}, nil
}

// headerError words the error of opening the weight file at path (as
// messages name it); a header past its bounds is told the limits that set
// them.
func headerError(err error, path, limits string) error {
	var tooMany *safetensors.TooManyTensorsError
	switch {
	case errors.As(err, &tooMany) && tooMany.ZeroSize:
		return errors.Errorf("%s: lists more than %d tensors with no elements (a zero in the shape); %s", path, tooMany.Max, limits)
	case errors.As(err, &tooMany):
		return errors.Errorf("%s: lists more than %d tensors; %s", path, tooMany.Max, limits)
	}
	return errors.Wrapf(unwrapPath(err), "%s", path)
}

// openShards opens the shards model.safetensors.index.json lists and
// checks that each holds exactly the tensors the index places in it.
func openShards(d *modelDir, s shape) (*weights, error) {
	raw, err := d.readJSON(IndexFile, maxIndexBytes)
	if err != nil {
		return nil, err
	}
	index := d.path(IndexFile)
	placed, err := parseIndex(raw)
	if err != nil {
		return nil, errors.Wrapf(err, "%s", index)
	}
	if len(placed) > s.most+countSlack {
		return nil, errors.Errorf("%s: weight_map lists %d tensors; %s", index, len(placed), s.limits())
	}
	w := &weights{lister: index, shape: s}
	for _, shard := range shardNames(placed) {
		if !d.has(shard) {
			w.Close()
			return nil, errors.Errorf("%s: no such file (a shard %s lists)", d.shown(shard), IndexFile)
		}
		n := placedIn(placed, shard)
		f, err := openWeightFile(d, shard, s.bounds(n), fmt.Sprintf("%s places %d tensors in it", IndexFile, n))
		if err == nil {
			w.files = append(w.files, f)
			err = checkShard(f, shard, placed)
		}
		if err != nil {
			w.Close()
			return nil, err
		}
	}
	return w, nil
}

// parseIndex reads an index's weight_map (tensor name -> shard file),
// refusing a shard name that is not a plain file name.
func parseIndex(raw []byte) (map[string]string, error) {
	top, err := members(raw)
	if err != nil {
		return nil, err
	}
	var weightMap []member
	for _, m := range top {
		if m.key == "weight_map" {
			if weightMap, err = members(m.value); err != nil {
				return nil, errors.Wrap(err, "weight_map")
			}
		}
	}
	if len(weightMap) == 0 {
		return nil, errors.New("weight_map lists no tensors")
	}
	placed := make(map[string]string, len(weightMap))
	for _, m := range weightMap {
		var shard string
		if err := jsonString(m.value, &shard); err != nil {
			return nil, errors.Errorf("weight_map: tensor %s: shard %s is not a string", msg.Quote(m.key), shown(m.value))
		}
		if shard == "" || shard == "." || shard == ".." || strings.ContainsAny(shard, `/\`) {
			return nil, errors.Errorf("weight_map: tensor %s is placed in %s; a shard must be a file name in the directory (no path separator, not . or ..)",
				msg.Quote(m.key), msg.Quote(shard))
		}
		placed[m.key] = shard
	}
	return placed, nil
}

// shardNames are the files an index places tensors in, sorted.
func shardNames(placed map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, shard := range placed {
		if !seen[shard] {
			seen[shard] = true
			out = append(out, shard)
		}
	}
	sort.Strings(out)
	return out
}

// placedIn is the number of tensors the index places in shard.
func placedIn(placed map[string]string, shard string) int {
	n := 0
	for _, where := range placed {
		if where == shard {
			n++
		}
	}
	return n
}

// checkShard refuses a shard holding a tensor the index does not place in
// it, or lacking one it does.
func checkShard(f *weightFile, shard string, placed map[string]string) error {
	holds := map[string]bool{}
	for _, in := range f.st.Tensors() {
		holds[in.Name] = true
		switch where, ok := placed[in.Name]; {
		case !ok:
			return errors.Errorf("%s: holds tensor %s, which %s does not list", f.path, msg.Quote(in.Name), IndexFile)
		case where != shard:
			return errors.Errorf("%s: holds tensor %s, which %s places in %s", f.path, msg.Quote(in.Name), IndexFile, msg.Clean(where))
		}
	}
	names := make([]string, 0, len(placed))
	for name, where := range placed {
		if where == shard && !holds[name] {
			names = append(names, name)
		}
	}
	if len(names) > 0 {
		sort.Strings(names)
		return errors.Errorf("%s: holds no tensor %s, which %s places there (%d missing in all)", f.path, msg.Quote(names[0]), IndexFile, len(names))
	}
	return nil
}
