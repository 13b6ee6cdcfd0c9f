package nanogpt

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// GPTConfig's fields as train.py saves them in model_args; dropout is the
// one a forward without training ignores.
var intArgs = []string{"n_layer", "n_head", "n_embd", "block_size", "vocab_size"}

const (
	argBias    = "bias"
	argDropout = "dropout"
	// maxArg bounds every size of model_args, far above any model's, so
	// that no product of two overflows.
	maxArg = 1 << 31
)

// configOf is the model nanoGPT's GPT(GPTConfig(**model_args)) builds: GPT-2's
// pre-LN block with learned positions, exact GELU, an MLP of 4·n_embd, a
// LayerNorm at eps 1e-5 and Linears all with a bias or all without (bias),
// and the LM head tied to the token embedding.
func configOf(args []entry) (model.Config, error) {
	known := append(slices.Clone(intArgs), argBias, argDropout)
	for _, a := range args {
		if !slices.Contains(known, a.name()) {
			return model.Config{}, errors.Errorf("model_args has %s, which nanoGPT's GPTConfig has not (it has %s)", msg.Quote(a.name()), strings.Join(known, ", "))
		}
	}
	sizes := map[string]int{}
	for _, name := range intArgs {
		v, ok := lookup(args, name)
		if !ok {
			return model.Config{}, errors.Errorf("model_args has no %s", name)
		}
		n, err := intValue(v, "model_args "+name)
		if err != nil {
			return model.Config{}, err
		}
		if n < 1 || n >= maxArg {
			return model.Config{}, errors.Errorf("model_args %s = %d: want 1 to %d", name, n, maxArg-1)
		}
		sizes[name] = n
	}
	v, ok := lookup(args, argBias)
	bias, isBool := v.(bool)
	if !ok || !isBool {
		return model.Config{}, errors.Errorf("model_args bias is %s, want True or False", typeName(v))
	}
	if sizes["n_embd"]%sizes["n_head"] != 0 {
		return model.Config{}, errors.Errorf("model_args n_embd = %d is not a multiple of n_head = %d", sizes["n_embd"], sizes["n_head"])
	}
	cfg := model.Config{
		Vocab: sizes["vocab_size"], Context: sizes["block_size"], DModel: sizes["n_embd"], Heads: sizes["n_head"],
		Layers: sizes["n_layer"], MLP: true, DFF: 4 * sizes["n_embd"], QKVBias: bias, OutBias: bias,
		Activation: model.ActivationGELU, NormBias: flagOf(bias), MLPBias: flagOf(bias), TieEmbeddings: true,
	}
	return cfg, errors.Wrap(cfg.Validate(), "model_args")
}

func flagOf(on bool) model.Flag {
	if on {
		return model.FlagOn
	}
	return model.FlagOff
}

// describe is cfg in model_args' words, for errors about shapes.
func describe(cfg model.Config) string {
	return fmt.Sprintf("model_args n_layer %d, n_head %d, n_embd %d, block_size %d, vocab_size %d, bias %s",
		cfg.Layers, cfg.Heads, cfg.DModel, cfg.Context, cfg.Vocab, pyBool(cfg.QKVBias))
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// Names of nanoGPT's tensors and the project's: GPT-2's names under
// "transformer.", a block's under "transformer.h.N." (the project's under
// "blocks.N."); Linear weights are (out, in) in both.
var (
	topNames = map[string]string{
		"transformer.wte.weight": "tok_emb.weight", "transformer.wpe.weight": "pos_emb.weight",
		"transformer.ln_f.weight": "ln_f.weight", "transformer.ln_f.bias": "ln_f.bias",
		"lm_head.weight": "lm_head.weight",
	}
	blockNames = map[string]string{
		"ln_1.weight": "ln1.weight", "ln_1.bias": "ln1.bias",
		"attn.c_attn.weight": "attn.qkv.weight", "attn.c_attn.bias": "attn.qkv.bias",
		"attn.c_proj.weight": "attn.out.weight", "attn.c_proj.bias": "attn.out.bias",
		"ln_2.weight": "ln2.weight", "ln_2.bias": "ln2.bias",
		"mlp.c_fc.weight": "mlp.fc.weight", "mlp.c_fc.bias": "mlp.fc.bias",
		"mlp.c_proj.weight": "mlp.proj.weight", "mlp.c_proj.bias": "mlp.proj.bias",
	}
)

const (
	blockPrefix   = "transformer.h."
	projectPrefix = "blocks."
	// maskName is the causal mask buffer torch < 2's attention keeps in
	// each block (transformer.h.N.attn.bias): not a weight.
	maskName = "attn.bias"
	// compiledPrefix starts every name of a model train.py compiled.
	compiledPrefix = "_orig_mod."
)

// projectName is the project's name for a nanoGPT tensor of a model with
// layers blocks; mask reports a causal mask buffer, ok false a name that is
// neither.
func projectName(name string, layers int) (project string, mask, ok bool) {
	if p, ok := topNames[name]; ok {
		return p, false, true
	}
	rest, ok := strings.CutPrefix(name, blockPrefix)
	if !ok {
		return "", false, false
	}
	index, suffix, _ := strings.Cut(rest, ".")
	if layer, err := strconv.Atoi(index); err != nil || layer < 0 || layer >= layers || strconv.Itoa(layer) != index {
		return "", false, false
	}
	if suffix == maskName {
		return "", true, true
	}
	p, ok := blockNames[suffix]
	return projectPrefix + index + "." + p, false, ok
}

// nanoName is nanoGPT's name for a project tensor (for errors).
func nanoName(project string) string {
	for n, p := range topNames {
		if p == project {
			return n
		}
	}
	rest, _ := strings.CutPrefix(project, projectPrefix)
	index, suffix, _ := strings.Cut(rest, ".")
	for n, p := range blockNames {
		if p == suffix {
			return blockPrefix + index + "." + n
		}
	}
	return project
}

// modelTensors maps a state dict to the parameters of cfg by the project's
// names, after dropping the causal masks and, when lm_head.weight is
// another tensor than transformer.wte.weight (a nanoGPT whose head was
// untied), giving cfg an LM head of its own. Every parameter must be there
// with its shape, and nothing else.
func modelTensors(cfg *model.Config, state map[string]*tensorRef) (map[string]*tensorRef, error) {
	// Every block has tensors of its own: checked first, a corrupt n_layer
	// cannot make ParamSpecs list billions of names.
	if cfg.Layers > len(state) {
		return nil, errors.Errorf("model_args n_layer = %d, but the model's state dict holds only %d tensors", cfg.Layers, len(state))
	}
	if head, ok := state["lm_head.weight"]; ok {
		if wte, ok := state["transformer.wte.weight"]; ok && head.sameView(wte) {
			delete(state, "lm_head.weight")
		} else {
			cfg.TieEmbeddings = false
		}
	}
	byProject := map[string]*tensorRef{}
	for _, name := range sortedKeys(state) {
		project, mask, ok := projectName(name, cfg.Layers)
		if !ok {
			return nil, errors.Errorf("unexpected tensor %s in the model's state dict (%s)", msg.Quote(name), describe(*cfg))
		}
		if !mask {
			byProject[project] = state[name]
		}
	}
	out := map[string]*tensorRef{}
	for _, spec := range cfg.ParamSpecs() {
		t, ok := byProject[spec.Name]
		if !ok {
			return nil, errors.Errorf("the model's state dict has no %s (%s)", nanoName(spec.Name), describe(*cfg))
		}
		if !slices.Equal(t.shape, spec.Shape) {
			return nil, errors.Errorf("tensor %s has shape %v, want %v (%s)", nanoName(spec.Name), t.shape, spec.Shape, describe(*cfg))
		}
		out[spec.Name] = t
		delete(byProject, spec.Name)
	}
	if len(byProject) > 0 {
		return nil, errors.Errorf("unexpected tensor %s: %s has none", nanoName(sortedKeys(byProject)[0]), describe(*cfg))
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
