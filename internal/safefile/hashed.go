package safefile

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"os"
	"sort"
	"sync"

	"github.com/pkg/errors"
)

// Digest is a file's size and SHA-256 (64 lowercase hex digits).
type Digest struct {
	Size   int64
	SHA256 string
}

// HashedFile is a regular file opened once (OpenHashed) whose digest is of
// the bytes its reader consumed: every read is hashed as it is served, so
// that a file replaced or rewritten while a loader reads it cannot give a
// digest of other bytes than those loaded.
//
// A loader that reads the file in order (a safetensors file, a JSON file)
// makes one pass: Sum hashes the rest through the same descriptor. A loader
// that reads out of order (a zip, its directory first) makes runs of
// contiguous reads, each hashed on its own; Sum then hashes the file from
// the start through the same descriptor and requires each run to hash as
// it did when served, so the digest is still of the bytes loaded, or Sum
// refuses the file as changed while it was read. Memory is one hash state
// per run of contiguous reads, never the bytes.
type HashedFile struct {
	f    *os.File
	path string
	size int64 // when opened

	mu   sync.Mutex // ReadAt may be called from several goroutines
	pos  int64      // Read's offset
	runs []*readRun
}

// readRun is a range [off, end) of the file served in contiguous reads,
// hashed as served; sum is set once a read elsewhere ends it.
type readRun struct {
	off, end int64
	h        hash.Hash
	sum      []byte
}

// OpenHashed opens the regular file at path (OpenRegular) for reads that
// are hashed as they are served.
func OpenHashed(path string) (*HashedFile, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	return Hashed(f, path)
}

// Hashed is OpenHashed of f, a regular file open for reading at path (as
// OpenRegular or OpenOwn open one); on an error it closes f.
func Hashed(f *os.File, path string) (*HashedFile, error) {
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &HashedFile{f: f, path: path, size: info.Size()}, nil
}

// Size is the file's size when it was opened.
func (f *HashedFile) Size() int64 { return f.size }

// Name is the path the file was opened at.
func (f *HashedFile) Name() string { return f.path }

// Close closes the file.
func (f *HashedFile) Close() error { return f.f.Close() }

// ReadAt reads as os.File.ReadAt does and hashes what it served.
func (f *HashedFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(p, off)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.served(off, p[:n])
	return n, err
}

// Read reads from the offset the previous Read ended at, hashed as ReadAt;
// it is for one goroutine.
func (f *HashedFile) Read(p []byte) (int, error) {
	n, err := f.ReadAt(p, f.pos)
	f.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// served hashes the bytes b served from off: into the current run when
// they continue it, else into a new one.
func (f *HashedFile) served(off int64, b []byte) {
	if len(b) == 0 {
		return
	}
	last := len(f.runs) - 1
	if last < 0 || f.runs[last].end != off {
		if last >= 0 {
			f.runs[last].close()
		}
		f.runs = append(f.runs, &readRun{off: off, end: off, h: sha256.New()})
		last++
	}
	r := f.runs[last]
	r.h.Write(b)
	r.end += int64(len(b))
}

func (r *readRun) close() {
	if r.sum == nil {
		r.sum = r.h.Sum(nil)
	}
}

// ReadLimit reads the whole file, refusing one of more than limit bytes
// before reading it, as the package's ReadLimit does; what names the limit.
func (f *HashedFile) ReadLimit(limit int64, what string) ([]byte, error) {
	if f.size > limit {
		return nil, tooLarge(f.path, f.size, limit, what)
	}
	raw, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, errors.Wrapf(unwrapPath(err), "%s", f.path)
	}
	if int64(len(raw)) > limit {
		return nil, tooLarge(f.path, int64(len(raw)), limit, what)
	}
	return raw, nil
}

// Sum is the file's size and SHA-256, once every read has returned, of the bytes its reads consumed (see
// HashedFile): read in order from the start, the rest is hashed on; else
// the whole file is hashed again, each run of reads checked against it. A
// file whose size or consumed bytes changed while it was read is refused,
// naming it.
func (f *HashedFile) Sum() (Digest, error) {
	if len(f.runs) == 1 && f.runs[0].off == 0 {
		r := f.runs[0]
		n, err := io.Copy(r.h, io.NewSectionReader(f.f, r.end, 1<<62))
		if err != nil {
			return Digest{}, errors.Wrapf(unwrapPath(err), "reading %s", f.path)
		}
		return f.digest(r.end+n, r.h)
	}
	return f.verify()
}

// verify hashes the whole file through its descriptor, checking that every
// run of reads hashes as it did when served.
func (f *HashedFile) verify() (Digest, error) {
	runs := append([]*readRun(nil), f.runs...)
	for _, r := range runs {
		r.close()
		r.h.Reset()
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].off < runs[j].off })
	whole := sha256.New()
	buf := make([]byte, 1<<20)
	var at int64
	for {
		n, err := f.f.ReadAt(buf, at)
		chunk := buf[:n]
		whole.Write(chunk)
		for _, r := range runs {
			if lo, hi := max(r.off, at), min(r.end, at+int64(n)); lo < hi {
				r.h.Write(chunk[lo-at : hi-at])
			}
		}
		at += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return Digest{}, errors.Wrapf(unwrapPath(err), "reading %s", f.path)
		}
	}
	for _, r := range runs {
		if string(r.h.Sum(nil)) != string(r.sum) {
			return Digest{}, f.changed()
		}
	}
	return f.digest(at, whole)
}

// digest is the file's Digest once size bytes were hashed into h.
func (f *HashedFile) digest(size int64, h hash.Hash) (Digest, error) {
	if size != f.size {
		return Digest{}, f.changed()
	}
	return Digest{Size: size, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

func (f *HashedFile) changed() error {
	return errors.Errorf("%s changed while it was read; read it again once nothing writes it", f.path)
}
