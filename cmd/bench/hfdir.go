package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pkg/errors"
	"golang.org/x/sys/unix"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/rundir"
)

// llamaShape is a Llama 3 a -decode-config writes as a Hugging Face
// directory of random BF16 weights: config.json as transformers writes a
// LlamaForCausalLM's (llama3 rope scaling, untied head), the weights in
// shards of at most shardBytes with model.safetensors.index.json.
type llamaShape struct {
	vocab, hidden, layers, heads, kvHeads, ffn, context int
	bos, eos                                            int
	shardBytes                                          int64
}

// llama3_8B is Llama 3.1 8B's shape (its config.json on the hub); its
// shards of at most 5 GB are transformers' default.
var llama3_8B = llamaShape{vocab: 128256, hidden: 4096, layers: 32, heads: 32, kvHeads: 8, ffn: 14336, context: 131072,
	bos: 128000, eos: 128001, shardBytes: 5e9}

// hfTensor is one tensor of the directory, in the order of the model's
// modules (the order transformers fills shards in).
type hfTensor struct {
	name  string
	shape []int
}

// tensors are the shape's tensors under LlamaForCausalLM's names.
func (s llamaShape) tensors() []hfTensor {
	kv := s.hidden / s.heads * s.kvHeads
	ts := []hfTensor{{"model.embed_tokens.weight", []int{s.vocab, s.hidden}}}
	for l := range s.layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		ts = append(ts,
			hfTensor{p + "self_attn.q_proj.weight", []int{s.hidden, s.hidden}},
			hfTensor{p + "self_attn.k_proj.weight", []int{kv, s.hidden}},
			hfTensor{p + "self_attn.v_proj.weight", []int{kv, s.hidden}},
			hfTensor{p + "self_attn.o_proj.weight", []int{s.hidden, s.hidden}},
			hfTensor{p + "mlp.gate_proj.weight", []int{s.ffn, s.hidden}},
			hfTensor{p + "mlp.up_proj.weight", []int{s.ffn, s.hidden}},
			hfTensor{p + "mlp.down_proj.weight", []int{s.hidden, s.ffn}},
			hfTensor{p + "input_layernorm.weight", []int{s.hidden}},
			hfTensor{p + "post_attention_layernorm.weight", []int{s.hidden}})
	}
	return append(ts, hfTensor{"model.norm.weight", []int{s.hidden}}, hfTensor{"lm_head.weight", []int{s.vocab, s.hidden}})
}

// configJSON is config.json as transformers writes Llama 3.1's: sorted
// keys, two-space indent, Python's spelling of floats.
func (s llamaShape) configJSON() []byte {
	return fmt.Appendf(nil, `{
  "architectures": [
    "LlamaForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": %d,
  "eos_token_id": %d,
  "head_dim": %d,
  "hidden_act": "silu",
  "hidden_size": %d,
  "initializer_range": 0.02,
  "intermediate_size": %d,
  "max_position_embeddings": %d,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": %d,
  "num_hidden_layers": %d,
  "num_key_value_heads": %d,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 8.0,
    "high_freq_factor": 4.0,
    "low_freq_factor": 1.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.43.0",
  "use_cache": true,
  "vocab_size": %d
}
`, s.bos, s.eos, s.hidden/s.heads, s.hidden, s.ffn, s.context, s.heads, s.layers, s.kvHeads, s.vocab)
}

// hfShard is one weights file: its tensors sorted by name (safetensors'
// order for one dtype), what precedes their data, and its size.
type hfShard struct {
	name    string
	tensors []safetensors.Tensor
	header  []byte
	size    int64
}

// shardMetadata is every shard's header metadata, as transformers writes it.
var shardMetadata = map[string]string{"format": "pt"}

// shards splits the tensors in module order into files of at most
// shardBytes of data (a larger tensor alone in one), as transformers does.
func (s llamaShape) shards() ([]hfShard, error) {
	var groups [][]safetensors.Tensor
	var used int64
	for _, t := range s.tensors() {
		st := safetensors.Tensor{Name: t.name, DType: safetensors.BF16, Shape: t.shape}
		n, err := safetensors.TensorBytes(st)
		if err != nil {
			return nil, err
		}
		if len(groups) == 0 || used > 0 && used+n > s.shardBytes {
			groups, used = append(groups, nil), 0
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], st)
		used += n
	}
	shards := make([]hfShard, len(groups))
	for i, g := range groups {
		slices.SortFunc(g, func(a, b safetensors.Tensor) int { return strings.Compare(a.Name, b.Name) })
		header, err := safetensors.StreamedHeader(g, shardMetadata)
		if err != nil {
			return nil, err
		}
		size := int64(len(header))
		for _, t := range g {
			n, _ := safetensors.TensorBytes(t)
			size += n
		}
		shards[i] = hfShard{name: fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(groups)), tensors: g, header: header, size: size}
	}
	return shards, nil
}

// indexFile is the name of the shards' index.
const indexFile = "model.safetensors.index.json"

// indexJSON is model.safetensors.index.json as transformers writes it.
func indexJSON(shards []hfShard) ([]byte, error) {
	var total int64
	weightMap := map[string]string{}
	for _, sh := range shards {
		for _, t := range sh.tensors {
			n, _ := safetensors.TensorBytes(t)
			total += n
			weightMap[t.Name] = sh.name
		}
	}
	index := struct {
		Metadata  map[string]int64  `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}{map[string]int64{"total_size": total}, weightMap}
	b, err := json.MarshalIndent(index, "", "  ")
	return append(b, '\n'), errors.Wrap(err, indexFile)
}

// dirFiles are the directory's small files by name, and its shards.
func (s llamaShape) dirFiles() (map[string][]byte, []hfShard, error) {
	shards, err := s.shards()
	if err != nil {
		return nil, nil, err
	}
	index, err := indexJSON(shards)
	if err != nil {
		return nil, nil, err
	}
	return map[string][]byte{"config.json": s.configJSON(), indexFile: index}, shards, nil
}

// dirBytes is the size of every file of the directory.
func dirBytes(small map[string][]byte, shards []hfShard) int64 {
	var n int64
	for _, b := range small {
		n += int64(len(b))
	}
	for _, sh := range shards {
		n += sh.size
	}
	return n
}

// freeBytes is the space the file system holding dir has free for this
// user (statfs); a variable so a test can pretend a full disk.
var freeBytes = func(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, errors.Wrapf(err, "statfs %s", dir)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// prepareModelDir makes dir hold the shape's directory of weights drawn
// from seed: an existing one that is already it (its config.json and index
// the same bytes, every shard its size and header) is reused as it is;
// otherwise dir must be new or empty and not an input (the output rule:
// safefile.CheckNewDir and CheckOutput), its file system must have room
// for it, and it is written whole beside its place and renamed there
// (safefile.WriteDirAtomic), one tensor streamed at a time. It says which
// on notes.
func prepareModelDir(dir string, s llamaShape, seed uint64, inputs []string, notes io.Writer) error {
	small, shards, err := s.dirFiles()
	if err != nil {
		return err
	}
	same, err := isModelDir(dir, small, shards)
	if err != nil || same {
		if same {
			fmt.Fprintf(notes, "reusing %s (its config.json, index and shard headers are this shape's; the weights are not reread)\n", dir)
		}
		return err
	}
	if err := checkModelDirOutput(dir, small, shards, inputs); err != nil {
		return err
	}
	need := dirBytes(small, shards)
	parent := filepath.Dir(filepath.Clean(dir))
	noteLeftovers(dir, notes)
	free, err := freeBytes(parent)
	if err != nil {
		return err
	}
	if free < need {
		return errors.Errorf("-model-dir %s: the model's files take %s and %s has %s free; name a directory on a disk with room", dir, msg.Bytes(float64(need)), parent, msg.Bytes(float64(free)))
	}
	fmt.Fprintf(notes, "writing %s of random BF16 weights to %s (seed %d)\n", msg.Bytes(float64(need)), dir, seed)
	return safefile.WriteDirAtomic(dir, func(tmp string) error {
		for name, b := range small {
			if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
				return errors.Wrapf(err, "write %s", filepath.Join(dir, name))
			}
		}
		for i, sh := range shards {
			err := safefile.WriteFileAtomic(filepath.Join(tmp, sh.name), func(w io.Writer) error {
				return safetensors.WriteStreamed(w, sh.tensors, shardMetadata, func(t safetensors.Tensor, w io.Writer) error {
					return writeRandomBF16(w, t, seed)
				})
			})
			if err != nil {
				return errors.Wrapf(err, "-model-dir %s", dir)
			}
			fmt.Fprintf(notes, "wrote %s (%d of %d)\n", sh.name, i+1, len(shards))
		}
		return nil
	})
}

// noteLeftovers names the temporary directories an interrupted write of
// dir left beside it (safefile.WriteDirAtomic's ".<base>.tmp-<digits>"),
// which hold up to the model's size: the user removes them, the bench
// removes nothing it did not make in this run.
func noteLeftovers(dir string, notes io.Writer) {
	clean := filepath.Clean(dir)
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(clean), "."+filepath.Base(clean)+".tmp-*"))
	for _, l := range left {
		fmt.Fprintf(notes, "note: %s is left from an interrupted write of %s; remove it to free its space\n", l, dir)
	}
}

// checkModelDirOutput refuses dir as the output: not new or empty, or it
// or a file written in it one of inputs or a run's file.
func checkModelDirOutput(dir string, small map[string][]byte, shards []hfShard, inputs []string) error {
	if err := safefile.CheckNewDir(dir); err != nil {
		return errors.Wrapf(err, "-model-dir: it is not this shape's model directory (%s)", refusalOfReuse(dir, small, shards))
	}
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		if err := safefile.CheckOutput(dir, inputs, rundir.RefuseRunFile); err != nil {
			return err
		}
	}
	names := []string{}
	for name := range small {
		names = append(names, name)
	}
	for _, sh := range shards {
		names = append(names, sh.name)
	}
	for _, name := range names {
		if err := safefile.CheckOutput(filepath.Join(dir, name), inputs, rundir.RefuseRunFile); err != nil {
			return err
		}
	}
	return nil
}

// isModelDir reports whether dir already holds the directory: the small
// files byte for byte, each shard of its size with its header.
func isModelDir(dir string, small map[string][]byte, shards []hfShard) (bool, error) {
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return false, nil
	}
	return refusalOfReuse(dir, small, shards) == "", nil
}

// refusalOfReuse is why dir is not the directory ("" when it is): the
// first file missing or different.
func refusalOfReuse(dir string, small map[string][]byte, shards []hfShard) string {
	for _, name := range []string{"config.json", indexFile} {
		got, err := safefile.ReadLimit(filepath.Join(dir, name), int64(len(small[name]))+1, name)
		if err != nil || !bytes.Equal(got, small[name]) {
			return name + " is not this shape's"
		}
	}
	for _, sh := range shards {
		if !shardIs(filepath.Join(dir, sh.name), sh) {
			return sh.name + " is not this shape's"
		}
	}
	return ""
}

// shardIs reports whether the file at path has the shard's size and header.
func shardIs(path string, sh hfShard) bool {
	f, err := safefile.OpenRegular(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || info.Size() != sh.size {
		return false
	}
	got := make([]byte, len(sh.header))
	if _, err := io.ReadFull(f, got); err != nil {
		return false
	}
	return bytes.Equal(got, sh.header)
}

// randomChunk is the values writeRandomBF16 draws and writes at a time.
const randomChunk = 1 << 19

// writeRandomBF16 writes t's values: ones for a vector (a norm's weight,
// as transformers initialises it), otherwise random values of magnitude
// 2^-8 to 2^-4 with a random sign (RMS about 0.03: activations stay
// finite through every layer), drawn from seed and t's name, so the same
// seed always gives the same file.
func writeRandomBF16(w io.Writer, t safetensors.Tensor, seed uint64) error {
	n, _ := safetensors.TensorBytes(t)
	values := n / 2
	rng := rand.New(rand.NewPCG(seed, nameHash(t.Name)))
	buf := make([]byte, 2*min(values, randomChunk))
	for values > 0 {
		k := min(values, randomChunk)
		if len(t.Shape) == 1 {
			for i := range k {
				binary.LittleEndian.PutUint16(buf[2*i:], 0x3f80) // 1.0
			}
		} else {
			fillRandomBF16(buf[:2*k], rng)
		}
		if _, err := w.Write(buf[:2*k]); err != nil {
			return err
		}
		values -= k
	}
	return nil
}

// fillRandomBF16 fills b with BF16 values, four from each 64 random bits:
// a sign, an exponent of 2^-8 to 2^-5 and seven bits of mantissa.
func fillRandomBF16(b []byte, rng *rand.Rand) {
	for i := 0; i < len(b); i += 8 {
		r := rng.Uint64()
		for j := 0; j < 8 && i+j < len(b); j += 2 {
			bits := uint16(r >> (8 * j))
			v := bits&0x8000 | (119+bits>>7&3)<<7 | bits&0x7f
			binary.LittleEndian.PutUint16(b[i+j:], v)
		}
	}
}

// nameHash is FNV-1a of name: each tensor's own random stream.
func nameHash(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := range len(name) {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return h
}
