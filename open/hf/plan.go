package hf

import (
	"fmt"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/model"
)

// source is where one tensor's values go: the tensor of a file, how it
// maps to its parameter, and the range of the parameter's values it fills.
type source struct {
	file *weightFile
	info safetensors.Info
	target
	// offset is where in its parameter the tensor's values go: it fills
	// [offset, offset + info.Len()).
	offset int
}

// planLoad finds each parameter of cfg among the files' tensors, from the
// headers alone: every tensor must be a parameter (or rows of one) or a
// buffer the architecture ignores, no slot filled twice or left empty,
// each of the shape cfg gives it and of a dtype that converts to float32.
// It returns the sources by slot.
func planLoad(arch architecture, cfg model.Config, w *weights) (map[slot]*source, error) {
	// Every block has tensors of its own: files with fewer tensors than the
	// model's parameters cannot match, and checking first keeps a corrupt
	// n_layer from making the name table hold billions of names. (The
	// headers were bounded by the most the model can have as they were
	// read.)
	if n := w.tensorCount(); w.shape.tooFew(n) {
		return nil, errors.Errorf("%s: holds %d tensors, too few for the %d layers of %s, which need at least %d (%s)",
			w.lister, n, cfg.Layers, ConfigFile, w.shape.least, arch.sizes(cfg))
	}
	names := arch.tensors(cfg)
	sources := map[slot]*source{}
	for _, f := range w.files {
		for _, in := range f.st.Tensors() {
			if err := place(sources, names, f, in, arch.class); err != nil {
				return nil, err
			}
		}
	}
	slots := slotsByParam(names)
	for _, spec := range cfg.ParamSpecs() {
		for _, sl := range slots[spec.Name] {
			s, ok := sources[sl]
			if !ok {
				return nil, errors.Errorf("%s: holds no tensor %s (%s)", w.lister, msg.Quote(fileName(names, sl)), arch.sizes(cfg))
			}
			if err := s.check(spec, arch.sizes(cfg)); err != nil {
				return nil, err
			}
		}
	}
	return sources, nil
}

// slotsByParam lists, for each parameter the names map to, the slots its
// tensors fill, in row order.
func slotsByParam(names map[string]target) map[string][]slot {
	out := map[string][]slot{}
	for _, t := range names {
		if t.ignored() {
			continue
		}
		for _, sl := range t.slots() {
			if !slices.Contains(out[sl.param], sl) {
				out[sl.param] = append(out[sl.param], sl)
			}
		}
	}
	for _, list := range out {
		slices.SortFunc(list, func(a, b slot) int { return a.first - b.first })
	}
	return out
}

// place records tensor in of file f as the source of its slot, or skips
// it when it is a buffer to ignore.
func place(sources map[slot]*source, names map[string]target, f *weightFile, in safetensors.Info, class string) error {
	t, ok := names[in.Name]
	switch {
	case !ok:
		return errors.Errorf("%s: unexpected tensor %s: not a parameter or buffer of the %s its %s describes",
			f.path, msg.Quote(in.Name), class, ConfigFile)
	case t.ignored() && t.ignoredShape != nil && !slices.Equal(in.Shape, t.ignoredShape):
		return errors.Errorf("%s: tensor %s has shape %v; tied to the token embedding, it must be %v",
			f.path, msg.Quote(in.Name), in.Shape, t.ignoredShape)
	case t.ignored():
		return nil
	}
	s := &source{file: f, info: in, target: t}
	for _, sl := range t.slots() {
		if prev, twice := sources[sl]; twice {
			return errors.Errorf("%s: tensor %s and %s in %s are the same parameter",
				f.path, msg.Quote(in.Name), msg.Quote(prev.info.Name), prev.file.path)
		}
		sources[sl] = s
	}
	return nil
}

// fileName is the name the files would give slot sl: the shortest one the
// table maps to it (without a prefix).
func fileName(names map[string]target, sl slot) string {
	best := ""
	for name, t := range names {
		if !t.ignored() && slices.Contains(t.slots(), sl) && (best == "" || len(name) < len(best) || len(name) == len(best) && name < best) {
			best = name
		}
	}
	return best
}

// readable are the dtypes read into float32.
var readable = []string{safetensors.F32, safetensors.F16, safetensors.BF16}

// check refuses a tensor whose shape is not the one spec gives its
// parameter (transposed for a Conv1D weight, its rows for a part), or
// whose dtype is not readable, and places it in its parameter's values.
func (s *source) check(spec model.ParamSpec, sizes string) error {
	want := spec.Shape
	switch {
	case s.transpose:
		want = []int{spec.Shape[1], spec.Shape[0]}
	case s.split != nil:
		want = append([]int{s.splitRows()}, spec.Shape[1:]...)
	case s.part.count > 0:
		want = append([]int{s.part.count}, spec.Shape[1:]...)
	}
	if !slices.Equal(s.info.Shape, want) {
		return errors.Errorf("%s: tensor %s has shape %v, want %v (%s)", s.file.path, msg.Quote(s.info.Name), s.info.Shape, want, sizes)
	}
	if !slices.Contains(readable, s.info.DType) {
		return errors.Errorf("%s: tensor %s has dtype %s; want F32, F16 or BF16", s.file.path, msg.Quote(s.info.Name), s.info.DType)
	}
	rowLen := 1
	for _, n := range spec.Shape[1:] {
		rowLen *= n
	}
	s.offset = rowLen * s.part.first
	return nil
}

// readValues reads every source, file by file in data order, into the
// float32 values of its parameter: the parts of a parameter into its rows
// of one slice.
func readValues(w *weights, sources map[slot]*source, cfg model.Config, progress func(done, total int64)) (map[string]any, error) {
	largest := 0
	for _, s := range sources {
		if s.transpose || s.split != nil {
			largest = max(largest, s.info.Len())
		}
	}
	r := &tensorReader{values: make(map[string]any, len(sources)), block: model.ParamBlock[float32](cfg), scratch: make([]float32, largest)}
	for _, f := range w.files {
		r.byName = map[string]*source{}
		for _, s := range sources {
			if s.file == f {
				r.byName[s.info.Name] = s
			}
		}
		_, err := counted(f.st, w, progress).ReadAll(r.visit)
		if err == nil {
			err = r.finish()
		}
		if err != nil {
			return nil, errors.Wrapf(err, "%s", f.path)
		}
	}
	if progress != nil {
		// Tensors the model does not use are skipped, not read.
		progress(w.dataLen(), w.dataLen())
	}
	return r.values, nil
}

// counted is st telling progress the bytes read of all w's files so far,
// or st itself when progress is nil.
func counted(st *safetensors.File, w *weights, progress func(done, total int64)) *safetensors.File {
	if progress == nil {
		return st
	}
	total := w.dataLen()
	if w.read == 0 {
		progress(0, total)
	}
	return st.Counted(func(n int64) {
		w.read += n
		progress(w.read, total)
	})
}

// dataLen is the bytes of tensor data of every file.
func (w *weights) dataLen() (n int64) {
	for _, f := range w.files {
		n += f.st.DataLen()
	}
	return n
}

// tensorReader gives ReadAll where each tensor goes, and finishes each
// tensor once it is read: ReadAll reads a tensor after visit returns, so
// the previous tensor is finished at the next visit, the last one after
// ReadAll.
type tensorReader struct {
	byName  map[string]*source   // the current file's sources by tensor name
	values  map[string]any       // the parameters' values
	block   map[string][]float32 // their memory, one block (model.ParamBlock)
	scratch []float32            // a Conv1D weight before its transpose, a split tensor before its rows are copied

	pending  *source   // the tensor read last, not yet finished
	raw, dst []float32 // its values as stored, and a transposed tensor's parameter's
}

func (r *tensorReader) visit(in safetensors.Info) (any, error) {
	if err := r.finish(); err != nil {
		return nil, err
	}
	s, ok := r.byName[in.Name]
	if !ok {
		return nil, nil // an ignored buffer
	}
	r.pending = s
	if s.transpose || s.split != nil {
		r.raw = r.scratch[:in.Len()]
	} else {
		r.raw = r.param(s.param)[s.offset : s.offset+in.Len()]
	}
	if s.transpose {
		r.dst = r.param(s.param)[s.offset : s.offset+in.Len()]
	}
	return r.raw, nil
}

// param is the values of parameter name, in the model's block.
func (r *tensorReader) param(name string) []float32 {
	values, ok := r.values[name].([]float32)
	if !ok {
		values = r.block[name]
		r.values[name] = values
	}
	return values
}

// scatter copies the rows of split tensor s, read into raw, to its
// parts' rows.
func (r *tensorReader) scatter(s *source) {
	rowLen := 1
	for _, n := range s.info.Shape[1:] {
		rowLen *= n
	}
	from := 0
	for _, p := range s.split {
		dst := r.param(p.param)[p.part.first*rowLen:]
		n := p.part.count * rowLen
		copy(dst[:n], r.raw[from:from+n])
		from += n
	}
}

// finish checks the pending tensor's values and transposes a Conv1D
// weight into its parameter, or scatters a split tensor's rows to theirs.
func (r *tensorReader) finish() error {
	s := r.pending
	if s == nil {
		return nil
	}
	r.pending = nil
	if i := model.FirstNonFinite(r.raw); i >= 0 {
		return errors.Errorf("tensor %s: value %v at %s is not finite", msg.Quote(s.info.Name), r.raw[i], index(s.info.Shape, i))
	}
	switch {
	case s.transpose:
		kernels.Transpose(r.dst, r.raw, s.info.Shape[0], s.info.Shape[1])
	case s.split != nil:
		r.scatter(s)
	}
	return nil
}

// index spells flat index i of a row-major tensor of shape as
// "index [r c]".
func index(shape []int, i int) string {
	coords := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		coords[d] = i % shape[d]
		i /= shape[d]
	}
	return fmt.Sprintf("index %v", coords)
}

// splitRows is the rows of a split tensor: its parts' together.
func (t target) splitRows() int {
	n := 0
	for _, p := range t.split {
		n += p.part.count
	}
	return n
}
