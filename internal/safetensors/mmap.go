package safetensors

import (
	"os"

	"github.com/pkg/errors"
)

// Mapping is the data section of a File mapped read-only into memory
// (mmap, MAP_SHARED): a tensor's bytes are read in place, from the page
// cache that every process mapping the file shares, and opening costs the
// header and the mapping, not the data. The bytes belong to the file: a
// file truncated while mapped makes a read of its lost pages fault
// (SIGBUS), which the reader turns into an error with
// debug.SetPanicOnFault (internal/ops' fault guard); a file rewritten in
// place shows its new bytes.
type Mapping struct {
	file *File
	all  []byte // the whole file as mapped, from offset 0
	data []byte // all[start:]: the data section
}

// Map maps f's data section read-only. f must have been opened from a path
// (Open, OpenBounded); a File read from a Source cannot be mapped, nor any
// file where CanMap is false. The mapping does not depend on the File:
// Close it before the File is closed or after, but not while its bytes
// are in use.
func (f *File) Map() (*Mapping, error) {
	osf, ok := f.f.(*os.File)
	if !ok {
		return nil, errors.Errorf("the file was opened from a %T, which cannot be mapped", f.f)
	}
	size := f.start + f.DataLen()
	if size == 0 || f.DataLen() == 0 {
		return &Mapping{file: f}, nil
	}
	all, err := mapFile(osf, size)
	if err != nil {
		return nil, err
	}
	return &Mapping{file: f, all: all, data: all[f.start:]}, nil
}

// Bytes is the named tensor's data in the mapping, little-endian elements
// of its dtype, with its Info; the slice aliases the file's pages and must
// not be written.
func (m *Mapping) Bytes(name string) ([]byte, Info, error) {
	i, ok := m.file.byName[name]
	if !ok {
		return nil, Info{}, errors.Errorf("no tensor %q in the file", name)
	}
	in := m.file.tensors[i]
	return m.data[in.Begin:in.End:in.End], in.clone(), nil
}

// Len is the bytes mapped.
func (m *Mapping) Len() int64 { return int64(len(m.all)) }

// Close unmaps the file; the slices Bytes gave must no longer be read.
func (m *Mapping) Close() error {
	if m.all == nil {
		return nil
	}
	err := unmap(m.all)
	m.all, m.data = nil, nil
	return err
}
