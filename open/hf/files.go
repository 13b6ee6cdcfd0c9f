package hf

import (
	"math"
	"os"
	"sort"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/internal/safetensors"
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
		n += len(f.st.Tensors())
	}
	return n
}

// openWeights opens the directory's weight files as transformers would
// choose them: model.safetensors when present, else the index's shards.
func openWeights(d *modelDir) (*weights, error) {
	switch {
	case d.has(WeightsFile):
		f, err := openWeightFile(d, WeightsFile)
		if err != nil {
			return nil, err
		}
		return &weights{files: []*weightFile{f}, lister: f.path}, nil
	case d.has(IndexFile):
		return openShards(d)
	case d.has(PickleFile) || d.has(PickleFile+".index.json"):
		return nil, errors.Errorf("%s: holds %s but no %s; a pickle is not read: convert it, e.g. in Python with transformers, "+
			"AutoModelForCausalLM.from_pretrained(%s).save_pretrained(%s) writes %s",
			d.name, PickleFile, WeightsFile, msg.Quote(d.name), msg.Quote(d.name), WeightsFile)
	}
	return nil, errors.Errorf("%s: holds no %s or %s", d.name, WeightsFile, IndexFile)
}

// openWeightFile opens the safetensors file called name in the directory
// and reads its header. The file's own size bounds what the header may
// claim, and Load checks the weights against MaxBytes before any data is
// read, so no size limit of its own is needed.
func openWeightFile(d *modelDir, name string) (*weightFile, error) {
	if err := d.checkInside(name); err != nil {
		return nil, err
	}
	path := d.path(name)
	if d.digests != nil {
		return openHashedWeights(d, name)
	}
	st, err := safetensors.Open(path, math.MaxInt64)
	if err != nil {
		return nil, errors.Wrapf(unwrapPath(err), "%s", d.shown(name))
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
func openHashedWeights(d *modelDir, name string) (*weightFile, error) {
	path := d.path(name)
	f, err := safefile.OpenHashed(path)
	if err != nil {
		return nil, errors.Wrapf(unwrapPath(err), "%s", d.shown(name))
	}
	st, err := safetensors.OpenSource(f, f.Size(), math.MaxInt64)
	if err != nil {
		f.Close()
		return nil, errors.Wrapf(err, "%s", d.shown(name))
	}
	d.noteRead(name, f.Size())
	return &weightFile{name: name, path: d.shown(name), st: st, hashed: f}, nil
}

// openShards opens the shards model.safetensors.index.json lists and
// checks that each holds exactly the tensors the index places in it.
func openShards(d *modelDir) (*weights, error) {
	raw, err := d.readJSON(IndexFile, maxIndexBytes)
	if err != nil {
		return nil, err
	}
	index := d.path(IndexFile)
	placed, err := parseIndex(raw)
	if err != nil {
		return nil, errors.Wrapf(err, "%s", index)
	}
	w := &weights{lister: index}
	for _, shard := range shardNames(placed) {
		if !d.has(shard) {
			w.Close()
			return nil, errors.Errorf("%s: no such file (a shard %s lists)", d.shown(shard), IndexFile)
		}
		f, err := openWeightFile(d, shard)
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
