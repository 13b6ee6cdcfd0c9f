package hf

import (
	"io"
	"math"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/model"
)

// Options say how Load reads.
type Options struct {
	// Notices receives one line per file read ("reading gpt2/model.safetensors
	// (522.7 MiB)"); nil drops them.
	Notices io.Writer
	// MaxBytes refuses a model whose weights take more bytes in float32;
	// 0 is model.MaxMemory.
	MaxBytes float64
	// Digests asks for Model.Digests: each file read is hashed as it is
	// read (safefile.HashedFile), for a run that records what it started
	// from.
	Digests bool
	// Progress, when set, hears the weights' bytes read so far of their
	// total as they load (at most a MiB between two calls); nil: nothing.
	Progress func(done, total int64)
}

// Model is a model opened from a Hugging Face directory.
type Model struct {
	Model *model.Model
	// Arch is the architecture config.json names ("GPT2LMHeadModel").
	Arch string
	// Specials are the special token ids config.json names.
	Specials Specials
	// Files are the files read, in the order read (config.json, the
	// index, the weights).
	Files []string
	// Digests are the size and SHA-256 of each of Files, of the bytes
	// loaded, when Options.Digests asked for them.
	Digests map[string]safefile.Digest
	// TokenizerFiles are the tokenizer files the directory holds
	// (tokenizer.json, vocab.json, merges.txt, tokenizer_config.json,
	// special_tokens_map.json, those present), none of them read, each
	// checked as a read file is: inside the directory.
	TokenizerFiles []string
}

// Load opens the Hugging Face model directory dir by the rules of the
// package doc. Every error is one line naming the file.
func Load(dir string, o Options) (*Model, error) {
	d, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	d.notices = o.Notices
	if o.Digests {
		d.digests = map[string]safefile.Digest{}
	}
	arch, cfg, specials, err := readConfig(d)
	if err != nil {
		return nil, err
	}
	if err := checkSize(d.name, cfg, o.MaxBytes); err != nil {
		return nil, err
	}
	tokenizer, err := d.tokenizerFiles()
	if err != nil {
		return nil, err
	}
	w, err := openWeights(d, newShape(arch, cfg))
	if err != nil {
		return nil, err
	}
	defer w.Close()
	sources, err := planLoad(arch, cfg, w)
	if err != nil {
		return nil, err
	}
	if arch.normaliser {
		cfg.EmbedScale = inDType(math.Sqrt(float64(cfg.DModel)), sources[slot{param: "tok_emb.weight"}].info.DType)
	}
	values, err := readValues(w, sources, cfg, o.Progress)
	if err != nil {
		return nil, err
	}
	if err := w.sum(d); err != nil {
		return nil, err
	}
	m, err := model.FromValues(cfg, values)
	if err != nil {
		return nil, errors.Wrapf(err, "%s", d.name)
	}
	return &Model{Model: m, Arch: arch.class, Specials: specials, Files: d.read, Digests: d.digests, TokenizerFiles: tokenizer}, nil
}

// readConfig reads config.json: the architecture it names, the model it
// describes and its special tokens.
func readConfig(d *modelDir) (architecture, model.Config, Specials, error) {
	path := d.path(ConfigFile)
	if !d.has(ConfigFile) {
		return architecture{}, model.Config{}, Specials{}, errors.Errorf("%s: no such file; a Hugging Face model directory holds %s and %s",
			path, ConfigFile, WeightsFile)
	}
	raw, err := d.readJSON(ConfigFile, maxConfigBytes)
	if err != nil {
		return architecture{}, model.Config{}, Specials{}, err
	}
	arch, cfg, specials, err := parseModelConfig(raw)
	if err != nil {
		return architecture{}, model.Config{}, Specials{}, errors.Wrapf(err, "%s", path)
	}
	return arch, cfg, specials, nil
}

// parseModelConfig is readConfig's reading of the file's contents.
func parseModelConfig(raw []byte) (architecture, model.Config, Specials, error) {
	keys, err := parseConfig(raw)
	if err != nil {
		return architecture{}, model.Config{}, Specials{}, err
	}
	arch, err := findArchitecture(keys)
	if err != nil {
		return architecture{}, model.Config{}, Specials{}, err
	}
	if arch.textTower != nil {
		if arch, keys, err = arch.textTower(arch, keys); err != nil {
			return architecture{}, model.Config{}, Specials{}, err
		}
	}
	cfg, err := arch.config(keys)
	if err != nil {
		return architecture{}, model.Config{}, Specials{}, err
	}
	specials, err := readSpecials(keys, arch, cfg.Vocab)
	return arch, cfg, specials, err
}

// checkSize refuses a model whose float32 weights take more than maxBytes
// (0: model.MaxMemory), from config.json alone: the count costs the same
// whatever the number of layers, so it comes before anything is built per
// layer or read from the weights.
func checkSize(dir string, cfg model.Config, maxBytes float64) error {
	if maxBytes == 0 {
		maxBytes = model.MaxMemory
	}
	count := cfg.ParamCount()
	if bytes := 4 * count; bytes > maxBytes {
		return errors.Errorf("%s: the model's %.0f weights take %s in float32, more than the %s limit",
			dir, count, msg.Bytes(bytes), msg.Bytes(maxBytes))
	}
	return nil
}
