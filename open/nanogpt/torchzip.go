package nanogpt

import (
	"archive/zip"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path"
	"strings"

	"github.com/nlpodyssey/gopickle/types"
	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
)

// The globals a nanoGPT checkpoint's data.pkl names (torch.save of a dict
// of state dicts): every other is refused.
const (
	globalOrderedDict = "collections.OrderedDict"
	globalFloatStore  = "torch.FloatStorage"
	globalRebuild     = "torch._utils._rebuild_tensor_v2"
)

// maxPickleBytes bounds data.pkl and meta.pkl. A nanoGPT checkpoint's
// pickle holds names and small values only (GPT-2 small's is about 50 KB;
// its tensors are apart), and unpickled objects take up to ~100 times the
// bytes that make them.
const maxPickleBytes = 4 << 20

// archive is an open torch zip: entries under one folder (named after
// the file torch.save wrote, which may since have been renamed): data.pkl,
// data/<key> for each storage, version, and in newer torch byteorder.
type archive struct {
	file     io.Closer
	zip      *zip.Reader
	folder   string
	entries  map[string]*zip.File // by name within the folder
	storages map[string]*storage  // by key, as persistent ids name them
}

// openArchive opens the torch zip at p and finds its folder.
func openArchive(p string) (*archive, error) {
	f, err := safefile.OpenRegular(p)
	if err != nil {
		return nil, errors.Wrap(unwrapPath(err), "open")
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return newArchive(p, f, info.Size())
}

// zipSource is what an archive reads: the file at p, or that file hashed
// as read (safefile.HashedFile).
type zipSource interface {
	io.ReaderAt
	io.Closer
}

// newArchive reads the torch zip f, of size bytes, the file at p, and finds
// its folder; on an error it closes f.
func newArchive(p string, f zipSource, size int64) (*archive, error) {
	zr, err := zip.NewReader(f, size)
	if err != nil {
		f.Close()
		return nil, notZip(p, err)
	}
	a := &archive{file: f, zip: zr, storages: map[string]*storage{}}
	if err := a.findFolder(); err != nil {
		f.Close()
		return nil, err
	}
	return a, nil
}

func (a *archive) Close() error { return a.file.Close() }

// notZip says why the file at p is no torch zip, recognising the legacy
// format torch wrote before 1.6 (a bare pickle).
func notZip(p string, err error) error {
	head := make([]byte, 2)
	if f, openErr := os.Open(p); openErr == nil {
		defer f.Close()
		if _, readErr := io.ReadFull(f, head); readErr == nil && head[0] == 0x80 && head[1] <= 5 {
			return errors.New("not a zip but a bare pickle: the format torch.save wrote before torch 1.6, which is not read; load and save it again with a newer torch")
		}
	}
	return errors.Errorf("not a torch checkpoint (torch.save writes a zip; %v)", err)
}

// findFolder finds the one FOLDER/data.pkl and checks that every entry lies
// in FOLDER and that the storages are little-endian.
func (a *archive) findFolder() error {
	for _, f := range a.zip.File {
		if dir, base := path.Split(f.Name); base == "data.pkl" && strings.Count(dir, "/") == 1 {
			if a.folder != "" {
				return errors.Errorf("the zip holds two pickles, %s and %s", msg.Clean(a.folder+"data.pkl"), msg.Clean(f.Name))
			}
			a.folder = dir
		}
	}
	if a.folder == "" {
		return errors.New("the zip holds no FOLDER/data.pkl, so it is not a torch checkpoint")
	}
	a.entries = make(map[string]*zip.File, len(a.zip.File))
	for _, f := range a.zip.File {
		name, ok := strings.CutPrefix(f.Name, a.folder)
		if !ok {
			return errors.Errorf("zip entry %s lies outside the checkpoint's folder %s", msg.Clean(f.Name), msg.Clean(a.folder))
		}
		a.entries[name] = f
	}
	if f := a.entry("byteorder"); f != nil {
		order, err := readEntry(f, 16)
		if err != nil {
			return err
		}
		if s := strings.TrimSpace(string(order)); s != "little" {
			return errors.Errorf("%s says the storages are %s-endian; only little-endian ones are read", msg.Clean(f.Name), msg.Clean(s))
		}
	}
	return nil
}

// entry is the zip entry FOLDER/name, or nil.
func (a *archive) entry(name string) *zip.File { return a.entries[name] }

// pickle reads and unpickles data.pkl, its storages resolved lazily: a
// storage's entry is found and its size checked, but nothing of it is read.
func (a *archive) pickle() (any, error) {
	f := a.entry("data.pkl")
	raw, err := readEntry(f, maxPickleBytes)
	if err != nil {
		return nil, err
	}
	up := unpickler{
		allowed:    []string{globalOrderedDict, globalFloatStore, globalRebuild},
		classes:    map[string]any{globalFloatStore: floatStorage, globalRebuild: call(rebuildTensor)},
		persistent: a.persistentLoad,
	}
	v, err := up.load(raw)
	return v, errors.Wrap(err, msg.Clean(f.Name))
}

// readEntry reads a whole small zip entry, refusing one over limit bytes.
func readEntry(f *zip.File, limit uint64) ([]byte, error) {
	if f.UncompressedSize64 > limit {
		return nil, errors.Errorf("%s is %d bytes, more than the %d bytes this reader allows it", msg.Clean(f.Name), f.UncompressedSize64, limit)
	}
	r, err := f.Open()
	if err != nil {
		return nil, errors.Wrap(err, msg.Clean(f.Name))
	}
	defer r.Close()
	raw, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, errors.Wrap(err, msg.Clean(f.Name))
	}
	if uint64(len(raw)) != f.UncompressedSize64 {
		return nil, errors.Errorf("%s holds %d bytes, its zip header says %d", msg.Clean(f.Name), len(raw), f.UncompressedSize64)
	}
	return raw, nil
}

// storageType is a torch storage class: the dtype of its elements.
type storageType struct {
	name     string
	elemSize int
}

var floatStorage = &storageType{globalFloatStore, 4}

// storage is one storage of the checkpoint: the zip entry of its bytes.
type storage struct {
	key   string
	typ   *storageType
	numel int
	file  *zip.File
}

// persistentLoad resolves a persistent id ('storage', class, key,
// location, numel) to its zip entry data/<key>, whose size must be numel
// elements of the class. The same key always resolves to the same storage.
func (a *archive) persistentLoad(pid any) (any, error) {
	t, ok := pid.(*types.Tuple)
	if !ok || t.Len() != 5 || t.Get(0) != "storage" {
		return nil, errors.Errorf("a persistent id is %s, want ('storage', class, key, location, numel)", typeName(pid))
	}
	typ, ok := t.Get(1).(*storageType)
	key, keyOK := t.Get(2).(string)
	if !ok || !keyOK {
		return nil, errors.Errorf("persistent id ('storage', %s, %s, ...) wants a storage class and a string key", typeName(t.Get(1)), typeName(t.Get(2)))
	}
	numel, err := intValue(t.Get(4), "storage "+msg.Quote(key)+"'s numel")
	if err != nil {
		return nil, err
	}
	if s, ok := a.storages[key]; ok {
		if s.typ != typ || s.numel != numel {
			return nil, errors.Errorf("storage %s is named twice with different sizes or classes", msg.Quote(key))
		}
		return s, nil
	}
	f := a.entry("data/" + key)
	if f == nil {
		return nil, errors.Errorf("storage %s is not in the zip (no entry %s)", msg.Quote(key), msg.Clean(a.folder+"data/"+key))
	}
	if numel < 0 || uint64(numel) > math.MaxInt64/uint64(typ.elemSize) || f.UncompressedSize64 != uint64(numel*typ.elemSize) {
		return nil, errors.Errorf("storage %s holds %d bytes, its id says %d elements of %d bytes", msg.Clean(f.Name), f.UncompressedSize64, numel, typ.elemSize)
	}
	s := &storage{key: key, typ: typ, numel: numel, file: f}
	a.storages[key] = s
	return s, nil
}

// tensorRef is a tensor of the pickle: a view of a storage, not read.
type tensorRef struct {
	storage *storage
	offset  int
	shape   []int
	stride  []int
}

// rebuildTensor is torch._utils._rebuild_tensor_v2(storage, offset, size,
// stride, requires_grad, backward_hooks[, metadata]): a view whose every
// element lies inside its storage.
func rebuildTensor(args ...any) (any, error) {
	if len(args) != 6 && len(args) != 7 {
		return nil, errors.Errorf("%s takes 6 or 7 arguments, the pickle gives %d", globalRebuild, len(args))
	}
	s, ok := args[0].(*storage)
	if !ok {
		return nil, errors.Errorf("%s's storage is %s", globalRebuild, typeName(args[0]))
	}
	t := &tensorRef{storage: s}
	var err error
	if t.offset, err = intValue(args[1], "a tensor's storage offset"); err != nil {
		return nil, err
	}
	if t.shape, err = intTuple(args[2], "a tensor's size"); err != nil {
		return nil, err
	}
	if t.stride, err = intTuple(args[3], "a tensor's stride"); err != nil {
		return nil, err
	}
	if len(t.stride) != len(t.shape) {
		return nil, errors.Errorf("a tensor of storage %s has size %v but stride %v", msg.Quote(s.key), t.shape, t.stride)
	}
	if last, ok := t.lastElement(); ok && (t.offset < 0 || last >= s.numel) {
		return nil, errors.Errorf("a tensor of size %v at offset %d reaches past storage %s of %d elements", t.shape, t.offset, msg.Quote(s.key), s.numel)
	}
	return t, nil
}

// lastElement is the index in the storage of the view's last element,
// false for an empty view; an index that overflows is MaxInt.
func (t *tensorRef) lastElement() (int, bool) {
	last := t.offset
	for i, d := range t.shape {
		if d == 0 {
			return 0, false
		}
		if t.stride[i] > 0 && d-1 > (math.MaxInt-last)/t.stride[i] {
			return math.MaxInt, true
		}
		last += (d - 1) * t.stride[i]
	}
	return last, true
}

// contiguous says whether the view is row-major without gaps, as every
// tensor of a state dict is.
func (t *tensorRef) contiguous() bool {
	want := 1
	for i := len(t.shape) - 1; i >= 0; i-- {
		if t.shape[i] != 1 && t.stride[i] != want {
			return false
		}
		want *= t.shape[i]
	}
	return true
}

// len is the number of elements; the view lies inside its storage, so it
// cannot overflow.
func (t *tensorRef) len() int {
	n := 1
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// sameView says whether t and u are the same elements of the same storage
// (nanoGPT's lm_head.weight is its transformer.wte.weight).
func (t *tensorRef) sameView(u *tensorRef) bool {
	return t.storage == u.storage && t.offset == u.offset && equalInts(t.shape, u.shape) && equalInts(t.stride, u.stride)
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// readable refuses a view float32s does not read: one that is not
// contiguous (a stride of 0 could make a small storage a huge tensor).
// Every storage is float32: the only storage class data.pkl may name.
func (t *tensorRef) readable() error {
	if !t.contiguous() {
		return errors.Errorf("has stride %v for size %v: not contiguous", t.stride, t.shape)
	}
	return nil
}

// chunkBytes is how much of a storage is held at once besides its values.
const chunkBytes = 1 << 16

// float32s reads a contiguous float32 view: the storage's whole entry is
// streamed, so the zip's CRC-32 is checked, and only the view is kept.
func (t *tensorRef) float32s() ([]float32, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	s := t.storage
	r, err := s.file.Open()
	if err != nil {
		return nil, errors.Wrap(err, s.file.Name)
	}
	defer r.Close()
	if _, err := io.CopyN(io.Discard, r, int64(t.offset)*4); err != nil {
		return nil, errors.Wrap(err, s.file.Name)
	}
	out := make([]float32, t.len())
	buf := make([]byte, min(chunkBytes, 4*len(out)))
	for done := 0; done < len(out); {
		n := min(len(buf)/4, len(out)-done)
		if _, err := io.ReadFull(r, buf[:4*n]); err != nil {
			return nil, errors.Wrap(err, s.file.Name)
		}
		for i := range n {
			out[done+i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
		}
		done += n
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, errors.Wrap(err, s.file.Name)
	}
	return out, nil
}

// unwrapPath drops the *os.PathError around err, whose path the caller
// names already.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
