package nanogpt

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/safefile"
)

const (
	fixture = "testdata/bias/ckpt.pt"
	// fixtureFolder is the folder torch.save put the fixture's entries in.
	fixtureFolder = "ckpt/"
)

// zipEntry is one entry of a torch zip.
type zipEntry struct {
	name string
	data []byte
}

// readZip is the entries of the zip at path, in order.
func readZip(t testing.TB, path string) []zipEntry {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var out []zipEntry
	for _, f := range zr.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, zipEntry{f.Name, data})
	}
	return out
}

// writeFile writes data to a new file in the test's directory and returns
// its path.
func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// zipBytes is a zip of entries, stored uncompressed as torch.save stores
// them.
func zipBytes(t *testing.T, entries []zipEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: zip.Store})
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

// editFixture is a copy of the fixture whose entries edit returns.
func editFixture(t *testing.T, edit func([]zipEntry) []zipEntry) string {
	t.Helper()
	return writeFile(t, "ckpt.pt", zipBytes(t, edit(readZip(t, fixture))))
}

// renaming maps each of fromTo's odd elements to the element after it, and
// every other string to itself.
func renaming(fromTo ...string) func(string) string {
	rename := map[string]string{}
	for i := 0; i < len(fromTo); i += 2 {
		rename[fromTo[i]] = fromTo[i+1]
	}
	return func(s string) string {
		if to, ok := rename[s]; ok {
			return to
		}
		return s
	}
}

// renameInPickle edits the fixture's data.pkl: every BINUNICODE string s
// (torch.save's protocol 2 writes every str so) becomes rename(s), its
// length rewritten.
func renameInPickle(t *testing.T, rename func(string) string) string {
	t.Helper()
	return editFixture(t, func(es []zipEntry) []zipEntry {
		for i, e := range es {
			if e.name != fixtureFolder+"data.pkl" {
				continue
			}
			var out []byte
			err := walkOps(e.data, func(op pickleOp) error {
				if op.name() != "BINUNICODE" {
					out = append(out, e.data[op.pos:op.pos+1+opLength(e.data, op)]...)
					return nil
				}
				out = append(out, ustr(rename(string(op.arg)))...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			es[i].data = out
		}
		return es
	})
}

// opLength is how many bytes follow op's opcode in data.
func opLength(data []byte, op pickleOp) int {
	_, next, _ := readOp(data, op.pos)
	return next - op.pos - 1
}

// Hand-made pickles: pkl is a protocol 2 stream of ops and STOP; ustr a
// BINUNICODE str, pint a BININT int, dict a dict of key-value ops.
func pkl(ops ...string) []byte { return []byte("\x80\x02" + strings.Join(ops, "") + ".") }

func ustr(s string) string { return "X" + le32(len(s)) + s }

func pint(n int) string { return "J" + le32(n) }

func dict(kvs ...string) string { return "}(" + strings.Join(kvs, "") + "u" }

func le32(n int) string { return string(binary.LittleEndian.AppendUint32(nil, uint32(n))) }

// checkpointZip is a torch zip holding pickle as its data.pkl.
func checkpointZip(t *testing.T, pickle []byte) string {
	t.Helper()
	return writeFile(t, "ckpt.pt", zipBytes(t, []zipEntry{{"archive/data.pkl", pickle}, {"archive/version", []byte("3\n")}}))
}

// damageStorage flips a byte inside the fixture's first storage, leaving
// the zip's CRC-32 as it was.
func damageStorage(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if f.Name == fixtureFolder+"data/0" {
			at, err := f.DataOffset()
			if err != nil {
				t.Fatal(err)
			}
			raw[at+5] ^= 0x40
		}
	}
	return writeFile(t, "ckpt.pt", raw)
}

// metaPickle is a meta.pkl of vocab_size, itos and stoi as prepare.py
// writes them, with stoi's entry for swap mapped to the id of swap's next
// character when swap is not "".
func metaPickle(vocab int, chars []string, swap string) []byte {
	var itos, stoi []string
	for id, c := range chars {
		itos = append(itos, pint(id)+ustr(c))
		to := id
		if c == swap {
			to = (id + 1) % len(chars)
		}
		stoi = append(stoi, ustr(c)+pint(to))
	}
	return pkl(dict(ustr("vocab_size"), pint(vocab), ustr("itos"), dict(itos...), ustr("stoi"), dict(stoi...)))
}

// TestRefused: a checkpoint or meta.pkl that is malicious, damaged or not
// nanoGPT's is refused with one line that names the file and the problem,
// before any code could run or any size read from the file is allocated.
func TestRefused(t *testing.T) {
	fixtureChars, err := readMeta("testdata/meta.pkl", safefile.ReadLimit, 49)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		// ckpt makes the checkpoint, and meta the meta.pkl (nil: none).
		ckpt func(t *testing.T) string
		meta []byte
		o    Options
		// want is in the error, which names the meta.pkl when there is one,
		// else the checkpoint.
		want string
	}{
		{name: "os.system called through REDUCE",
			ckpt: func(t *testing.T) string { return checkpointZip(t, pkl("cos\nsystem\n", ustr("echo owned"), "\x85R")) },
			want: "archive/data.pkl: global os.system (byte 2) is not allowed: this file may name only collections.OrderedDict, torch.FloatStorage, torch._utils._rebuild_tensor_v2"},
		{name: "a global from the stack",
			ckpt: func(t *testing.T) string {
				return checkpointZip(t, pkl(ustr("builtins"), ustr("eval"), "\x93", ustr("1"), "\x85R"))
			},
			want: "opcode STACK_GLOBAL (byte 24) names a global this reader cannot check before running"},
		{name: "a string longer than the pickle",
			ckpt: func(t *testing.T) string { return checkpointZip(t, pkl("X\xff\xff\xff\x7f")) },
			want: "BINUNICODE at byte 2 claims 2147483647 bytes, the pickle has 1 more"},
		{name: "a negative length",
			ckpt: func(t *testing.T) string { return checkpointZip(t, pkl("T\xfe\xff\xff\xff")) },
			want: "BINSTRING at byte 2 claims -2 bytes"},
		{name: "SETITEMS with a key and no value",
			ckpt: func(t *testing.T) string { return checkpointZip(t, pkl("}(", ustr("model"), "u")) },
			want: "archive/data.pkl: malformed pickle"},
		{name: "not a dict",
			ckpt: func(t *testing.T) string { return checkpointZip(t, pkl("]")) },
			want: "the checkpoint is a list, want a dict"},
		{name: "a persistent id that is no storage",
			ckpt: func(t *testing.T) string { return checkpointZip(t, pkl(ustr("x"), "Q")) },
			want: "a persistent id is a str, want ('storage', class, key, location, numel)"},
		{name: "a storage key not in the zip",
			ckpt: func(t *testing.T) string {
				return editFixture(t, func(es []zipEntry) []zipEntry {
					return slices.DeleteFunc(es, func(e zipEntry) bool { return e.name == fixtureFolder+"data/0" })
				})
			},
			want: `storage "0" is not in the zip (no entry ckpt/data/0)`},
		{name: "a storage shorter than its numel",
			ckpt: func(t *testing.T) string {
				return editFixture(t, func(es []zipEntry) []zipEntry {
					for i := range es {
						if es[i].name == fixtureFolder+"data/0" {
							es[i].data = es[i].data[:100]
						}
					}
					return es
				})
			},
			want: "storage ckpt/data/0 holds 100 bytes, its id says 1568 elements of 4 bytes"},
		{name: "a damaged storage", ckpt: damageStorage,
			want: "tensor transformer.wte.weight: ckpt/data/0: zip: checksum error"},
		{name: "not a zip",
			ckpt: func(t *testing.T) string { return writeFile(t, "ckpt.pt", []byte("step 300: train loss 2.6\n")) },
			want: "not a torch checkpoint (torch.save writes a zip; zip: not a valid zip file)"},
		{name: "torch's legacy format",
			ckpt: func(t *testing.T) string { return writeFile(t, "ckpt.pt", pkl("}")) },
			want: "not a zip but a bare pickle: the format torch.save wrote before torch 1.6"},
		{name: "a zip without data.pkl",
			ckpt: func(t *testing.T) string {
				return writeFile(t, "ckpt.pt", zipBytes(t, []zipEntry{{"ckpt/version", []byte("3\n")}}))
			},
			want: "the zip holds no FOLDER/data.pkl, so it is not a torch checkpoint"},
		{name: "big-endian storages",
			ckpt: func(t *testing.T) string {
				return editFixture(t, func(es []zipEntry) []zipEntry {
					return append(es, zipEntry{fixtureFolder + "byteorder", []byte("big")})
				})
			},
			want: "ckpt/byteorder says the storages are big-endian; only little-endian ones are read"},
		{name: "a dict without model_args",
			ckpt: func(t *testing.T) string { return renameInPickle(t, renaming("model_args", "args")) },
			want: "the checkpoint has no model_args (it has model, optimizer, args, iter_num, best_val_loss, config)"},
		{name: "a tensor missing",
			ckpt: func(t *testing.T) string {
				// The mask's name: the state dict keeps the tensor there, and ignores it.
				return renameInPickle(t, renaming("transformer.h.1.mlp.c_fc.weight", "transformer.h.1.attn.bias"))
			},
			want: "the model's state dict has no transformer.h.1.mlp.c_fc.weight (model_args n_layer 2, n_head 2, n_embd 32, block_size 32, vocab_size 49, bias True)"},
		{name: "a tensor of another shape",
			ckpt: func(t *testing.T) string {
				return renameInPickle(t, renaming("transformer.wte.weight", "transformer.wpe.weight", "transformer.wpe.weight", "transformer.wte.weight"))
			},
			want: "tensor transformer.wte.weight has shape [32 32], want [49 32]"},
		{name: "a name with and without the compiled prefix",
			ckpt: func(t *testing.T) string {
				return renameInPickle(t, renaming("transformer.wte.weight", "_orig_mod.transformer.wpe.weight"))
			},
			want: `the model's state dict has "transformer.wpe.weight" with and without _orig_mod.`},
		{name: "a tensor nanoGPT has not",
			ckpt: func(t *testing.T) string {
				return renameInPickle(t, renaming("transformer.h.0.ln_1.weight", "transformer.h.0.ln_1.scale"))
			},
			want: `unexpected tensor "transformer.h.0.ln_1.scale" in the model's state dict`},
		{name: "weights over the memory limit", o: Options{MaxBytes: 1000},
			ckpt: func(*testing.T) string { return fixture },
			want: "KiB as float32, more than the limit of 1000 B"},
		{name: "meta.pkl's vocab_size not the model's",
			ckpt: func(*testing.T) string { return fixture }, meta: metaPickle(50, fixtureChars, ""),
			want: "vocab_size = 50, but the model has a vocabulary of 49"},
		{name: "meta.pkl's stoi not itos's inverse",
			ckpt: func(*testing.T) string { return fixture }, meta: metaPickle(49, fixtureChars, "a"),
			want: `stoi["a"] = 24, but itos does not map 24 to it`},
		{name: "meta.pkl with a global",
			ckpt: func(*testing.T) string { return fixture }, meta: pkl("cos\nsystem\n", ustr("ls"), "\x85R"),
			want: "global os.system (byte 2) is not allowed: this file may name no global"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ckpt := c.ckpt(t)
			blamed := ckpt
			if c.meta != nil {
				c.o.Vocab = writeFile(t, "meta.pkl", c.meta)
				blamed = c.o.Vocab
			}
			_, err := Load(ckpt, c.o)
			if err == nil {
				t.Fatalf("loaded; want an error containing %q", c.want)
			}
			line := err.Error()
			if !strings.HasPrefix(line, blamed+":") && !strings.HasPrefix(line, blamed+" (") || !strings.Contains(line, c.want) || strings.Contains(line, "\n") {
				t.Errorf("error %q;\nwant one line naming %s and containing %q", line, blamed, c.want)
			}
		})
	}
}

// TestCompiledRun: the checkpoint of a run train.py compiled, whose state
// dict names all start with "_orig_mod.", loads the weights of the same
// checkpoint without the prefix.
func TestCompiledRun(t *testing.T) {
	compiled := renameInPickle(t, func(s string) string {
		if strings.HasPrefix(s, "transformer.") || s == "lm_head.weight" {
			return compiledPrefix + s
		}
		return s
	})
	want, err := Load(fixture, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Load(compiled, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Model.Config != want.Model.Config || len(got.Model.Params) != len(want.Model.Params) {
		t.Fatalf("config %+v with %d tensors, want %+v with %d", got.Model.Config, len(got.Model.Params), want.Model.Config, len(want.Model.Params))
	}
	for i, p := range got.Model.Params {
		if w := want.Model.Params[i]; p.Name != w.Name || !slices.Equal(p.Value.Float32s(), w.Value.Float32s()) {
			t.Errorf("tensor %d: %s, want %s with the same values", i, p.Name, w.Name)
		}
	}
}
