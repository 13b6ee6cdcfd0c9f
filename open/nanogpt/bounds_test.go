package nanogpt

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// le64 is n as 8 little-endian bytes.
func le64(n uint64) string { return string(binary.LittleEndian.AppendUint64(nil, n)) }

// hostilePickles are pickles that state sizes past the reader's bounds,
// each with what its refusal says. They seed FuzzPickles.
var hostilePickles = []struct {
	name   string
	pickle []byte
	want   string
}{
	// Protocol 4's FRAME: gopickle allocates the frame before reading it.
	{"a FRAME of 2^36 bytes", []byte("\x80\x04\x95" + le64(1<<36) + "N."),
		"FRAME at byte 2 claims 68719476736 bytes, the pickle has 2 more"},
	// Every length is checked against the bytes that remain.
	{"a BINBYTES8 of 2^62 bytes", pkl("\x8e" + le64(1<<62)),
		"BINBYTES8 at byte 2 claims 4611686018427387904 bytes, the pickle has 1 more"},
	{"a BINUNICODE8 of 2^40 bytes", pkl("\x8d" + le64(1<<40)),
		"BINUNICODE8 at byte 2 claims 1099511627776 bytes, the pickle has 1 more"},
	{"a SHORT_BINBYTES past the end", pkl("C\xff"),
		"SHORT_BINBYTES at byte 2 claims 255 bytes, the pickle has 1 more"},
	// gopickle decodes integers past 8 bytes in quadratic time.
	{"a LONG4 of 64 KiB", pkl("\x8b" + le32(1<<16) + strings.Repeat("\x01", 1<<16)),
		"LONG4 at byte 2 is an integer of 65536 bytes; this reader takes integers of up to 8 bytes"},
	{"a LONG1 of 9 bytes in model_args",
		pkl(dict(ustr("model_args"), dict(ustr("n_layer"), "\x8a\x09"+strings.Repeat("\x01", 9)))),
		"LONG1 at byte 33 is an integer of 9 bytes"},
	{"a text LONG of 1000 digits", pkl("L" + strings.Repeat("7", 1000) + "L\n"),
		"LONG at byte 2 is an integer of 1000 digits; this reader takes integers of up to 20 digits"},
	{"a memo index past the cap", pkl("Nr" + le32(1<<20)),
		"LONG_BINPUT at byte 3 writes memo index 1048576; this reader allows indexes below 262144"},
	{"more memo entries than the cap", pkl("N" + strings.Repeat("\x94", maxMemo+1)),
		"MEMOIZE at byte 262147 writes memo index 262144"},
	// gopickle pushes None for an index nothing wrote; Python refuses it.
	{"a memo index read before written", pkl("h\x05"),
		"BINGET at byte 2 reads memo index 5, which nothing wrote"},
	// Each MARK gives gopickle a stack of its own: these 200 KB allocate 78 MB.
	{"200,000 MARKs", pkl(strings.Repeat("(", 200_000) + "N"),
		"the values of the pickle up to here would take more than 64.0 MiB to build"},
}

// besideFixture is a copy of the fixture in a directory of its own with
// meta beside it as meta.pkl; it returns the checkpoint's path.
func besideFixture(t *testing.T, meta []byte) string {
	t.Helper()
	raw, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	ckpt := writeFile(t, "ckpt.pt", raw)
	if err := os.WriteFile(filepath.Join(filepath.Dir(ckpt), MetaFile), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	return ckpt
}

// allocatedBy is the bytes f allocates (TotalAlloc's growth).
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// maxRefusalAlloc bounds what refusing a hostile pickle may allocate: the
// files read and the walk, far below what any of them states.
const maxRefusalAlloc = 16 << 20

// TestPickleBounds: each hostile pickle, as a checkpoint's data.pkl and as
// the meta.pkl beside a good checkpoint, is refused with one line naming
// the file, before gopickle allocates what it states.
func TestPickleBounds(t *testing.T) {
	for _, c := range hostilePickles {
		t.Run(c.name, func(t *testing.T) {
			data := checkpointZip(t, c.pickle)
			beside := besideFixture(t, c.pickle)
			meta := filepath.Join(filepath.Dir(beside), MetaFile)
			for _, try := range []struct{ ckpt, blamed string }{{data, data + ": archive/data.pkl: "}, {beside, meta + " (the vocabulary of " + beside + "): "}} {
				var err error
				alloc := allocatedBy(func() { _, err = Load(try.ckpt, Options{}) })
				if err == nil || !strings.HasPrefix(err.Error(), try.blamed) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
					t.Errorf("error %v;\nwant one line starting %q and containing %q", err, try.blamed, c.want)
				}
				if alloc > maxRefusalAlloc {
					t.Errorf("%s: refusing it allocated %d bytes, want at most %d", try.blamed, alloc, maxRefusalAlloc)
				}
			}
		})
	}
}

// TestPickleBoundsAdmitTheFixture: the bounds leave room to spare for a
// real data.pkl: the fixture's memo and values are a small part of them.
func TestPickleBoundsAdmitTheFixture(t *testing.T) {
	for _, e := range readZip(t, fixture) {
		if e.name != fixtureFolder+"data.pkl" {
			continue
		}
		b := &bounds{data: e.data}
		if err := walkOps(e.data, b.check); err != nil {
			t.Fatal(err)
		}
		if b.entries*100 > maxMemo || b.cost*50 > maxUnpickledBytes {
			t.Errorf("the fixture's data.pkl has %d memo entries and costs %d bytes: want under 1%% of %d and 2%% of %d", b.entries, b.cost, maxMemo, maxUnpickledBytes)
		}
	}
}

// TestManyKeysNamedShortly: a meta.pkl of 20,000 keys and no vocab_size
// is refused naming a few of its keys, not all (which took time quadratic
// in their number to list).
func TestManyKeysNamedShortly(t *testing.T) {
	var kvs []string
	for i := range 20_000 {
		kvs = append(kvs, ustr(strconv.Itoa(i)), "N")
	}
	_, err := Load(besideFixture(t, pkl(dict(kvs...))), Options{})
	want := "no vocab_size (it has 0, 1, 2, 3, 4, 5, 6, 7 and 19992 more)"
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error %.300v; want it to end %q", err, want)
	}
}

// TestMetaSymlinkBeside: a meta.pkl beside the checkpoint that is a
// symbolic link is refused by name, not followed: to a good meta.pkl, to a
// file that is none, or dangling. One named with -vocab may be a link.
func TestMetaSymlinkBeside(t *testing.T) {
	good, err := filepath.Abs("testdata/meta.pkl")
	if err != nil {
		t.Fatal(err)
	}
	secret := writeFile(t, "passwd", []byte("root:x:0:0:root:/root:/bin/bash\n"))
	for _, target := range []string{good, secret, filepath.Join(t.TempDir(), "gone")} {
		ckpt := besideFixture(t, nil)
		meta := filepath.Join(filepath.Dir(ckpt), MetaFile)
		if err := os.Remove(meta); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, meta); err != nil {
			t.Fatal(err)
		}
		_, err := Load(ckpt, Options{})
		want := meta + " (the vocabulary of " + ckpt + "): is a symbolic link; a meta.pkl beside a checkpoint is read only as a file of its own"
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("meta.pkl linked to %s: error %v; want one line starting %q", target, err, want)
		}
	}
	link := filepath.Join(t.TempDir(), "vocab.pkl")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if m, err := Load(fixture, Options{Vocab: link}); err != nil || len(m.Chars) != 49 {
		t.Errorf("-vocab naming a link to the fixture's meta.pkl: %v", err)
	}
}

// TestStorageLargerThanItsTensor: a storage whose zip entry declares more
// bytes than the model's tensors use of it (here 8 MiB of zeros, deflated
// to a few KB, behind a tensor of 6 KB) is refused before it is inflated.
func TestStorageLargerThanItsTensor(t *testing.T) {
	const storageBytes = 8 << 20
	ckpt := writeFile(t, "ckpt.pt", deflatedZip(t, growStorage0(t, readZip(t, fixture), storageBytes)))
	if info, err := os.Stat(ckpt); err != nil || info.Size() > storageBytes/20 {
		t.Fatalf("the hostile checkpoint: %v, %v; want a file far smaller than its storage", info, err)
	}
	_, err := Load(ckpt, Options{})
	want := ckpt + ": tensor transformer.wte.weight: storage ckpt/data/0 holds 8388608 bytes, but the model's tensors use only 6272 of them"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %v; want one line starting %q", err, want)
	}
}

// TestDeflatedZeros: a checkpoint whose storages are zeros, deflated to
// a hundredth of what they declare, is refused before it is inflated; the
// fixture deflated as it is (its weights deflate by a tenth) loads.
func TestDeflatedZeros(t *testing.T) {
	es := readZip(t, fixture)
	if _, err := Load(writeFile(t, "ckpt.pt", deflatedZip(t, es)), Options{}); err != nil {
		t.Errorf("the fixture deflated: %v", err)
	}
	for i := range es {
		if strings.HasPrefix(es[i].name, fixtureFolder+"data/") {
			es[i].data = make([]byte, len(es[i].data))
		}
	}
	ckpt := writeFile(t, "ckpt.pt", deflatedZip(t, es))
	_, err := Load(ckpt, Options{})
	want := "this reader inflates at most 32 times (torch.save stores storages uncompressed"
	if err == nil || !strings.HasPrefix(err.Error(), ckpt+": the model's storages declare ") || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v; want one naming %s and containing %q", err, ckpt, want)
	}
}

// growStorage0 makes the fixture's storage "0" (transformer.wte.weight's,
// 1568 float32) size bytes: its entry padded with zeros and its persistent
// ids' numel (BININT2 1568 after the location 'cpu', memoized at 9) made
// size/4.
func growStorage0(t *testing.T, es []zipEntry, size int) []zipEntry {
	t.Helper()
	numel := "J" + le32(size/4)
	for i := range es {
		switch es[i].name {
		case fixtureFolder + "data/0":
			es[i].data = append(es[i].data, make([]byte, size-len(es[i].data))...)
		case fixtureFolder + "data.pkl":
			for _, before := range []string{ustr("cpu") + "q\t", "h\x08h\t"} {
				old := before + "M\x20\x06t"
				if bytes.Count(es[i].data, []byte(old)) != 1 {
					t.Fatalf("the fixture's data.pkl has not one %q", old)
				}
				es[i].data = bytes.Replace(es[i].data, []byte(old), []byte(before+numel+"t"), 1)
			}
		}
	}
	return es
}

// deflatedZip is a zip of entries, deflated.
func deflatedZip(t *testing.T, entries []zipEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzPickles: whatever a pickle holds, as the data.pkl of a checkpoint
// beside the fixture's storages or as the meta.pkl beside the fixture,
// Load returns a model or one line naming the file; it never panics. The
// seeds are the fixture's pickles, code to run and the hostile pickles.
func FuzzPickles(f *testing.F) {
	var storages []zipEntry
	for _, e := range readZip(f, fixture) {
		if e.name == fixtureFolder+"data.pkl" {
			f.Add(e.data)
		} else {
			storages = append(storages, e)
		}
	}
	meta, err := os.ReadFile("testdata/meta.pkl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(meta)
	f.Add(pkl("cos\nsystem\n", ustr("echo owned"), "\x85R"))
	f.Add(pkl("}(", ustr("model"), "u"))
	for _, c := range hostilePickles {
		f.Add(c.pickle)
	}
	f.Fuzz(func(t *testing.T, pickle []byte) {
		data := writeFile(t, "ckpt.pt", zipBytes(t, append([]zipEntry{{fixtureFolder + "data.pkl", pickle}}, storages...)))
		beside := besideFixture(t, pickle)
		meta := filepath.Join(filepath.Dir(beside), MetaFile)
		for _, blamed := range []struct{ ckpt, file string }{{data, data}, {beside, meta}} {
			_, err := Load(blamed.ckpt, Options{})
			if err != nil && (!strings.HasPrefix(err.Error(), blamed.file+":") && !strings.HasPrefix(err.Error(), blamed.file+" (") || strings.Contains(err.Error(), "\n")) {
				t.Errorf("error %q: want one line naming %s", err, blamed.file)
			}
		}
	})
}
