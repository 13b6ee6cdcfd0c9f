package analysis

import (
	"encoding/json"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/model"
)

// Saved is one activation of a file of activations (WriteActivations):
// the name it is saved under and the activation it is (the lab's name).
type Saved struct {
	File, Lab string
}

// SaveNames resolves what a user asks to save, each a name or a glob of
// the lab's or TransformerLens's (model.ResolveActivations), into the
// activations of a model of cfg, in the order asked and each once: a name
// is saved as asked, a glob's matches under the form it matched,
// TransformerLens's where it matches both ("blocks.0.*"). A name or glob
// that names nothing is refused, listing the names there are.
func SaveNames(cfg model.Config, asked []string) ([]Saved, error) {
	specs := cfg.Activations(1, 1) // which activations there are does not depend on the sizes
	var out []Saved
	for _, a := range asked {
		labs, err := model.ResolveActivations(specs, []string{a})
		if err != nil {
			return nil, err
		}
		for _, lab := range labs {
			spec := specs[slices.IndexFunc(specs, func(s model.ActivationSpec) bool { return s.Name == lab })]
			s := Saved{File: savedName(a, spec), Lab: lab}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// savedName is the name s is saved under when a (a name or a glob) names
// it.
func savedName(a string, s model.ActivationSpec) string {
	if a == s.Name || a == s.TL {
		return a
	}
	if tl, _ := path.Match(a, s.TL); tl {
		return s.TL
	}
	return s.Name
}

// SavedBytes is what the saved activations of a batch of batch rows of
// seqLen positions take in the model's dtype: the file's tensors, once.
func SavedBytes(m *model.Model, saved []Saved, batch, seqLen int) float64 {
	var n float64
	for _, spec := range m.Config.Activations(batch, seqLen) {
		for _, s := range saved {
			if s.Lab == spec.Name {
				n += float64(spec.Shape.TotalSize()) * float64(m.Dtype.Size())
			}
		}
	}
	return n
}

// WriteActivations writes the saved activations of c (which must have
// kept each Lab) as one safetensors file: each under its File name, in
// TransformerLens's layout (Cache.TL: batch first) and the model's dtype
// (F32 or F64), a file Python's safetensors.numpy.load_file, or numpy
// alone, reads. The metadata holds the batch's tokens ("tokens": JSON
// [batch][pos] ids) and, under each of labels' keys, what it maps to
// (JSON [batch][pos] strings: "labels", each token as the views show it;
// "texts", its raw text), beside the data's SHA-256 (safetensors.Write).
func WriteActivations(w io.Writer, c *Cache, saved []Saved, labels map[string][][]string) error {
	metadata := map[string]string{}
	tokens := make([][]int, c.Batch.Size)
	for i := range tokens {
		tokens[i], _, _ = c.Batch.Row(i)
	}
	values := map[string]any{"tokens": tokens}
	for k, v := range labels {
		values[k] = v
	}
	for k, v := range values {
		var text strings.Builder
		enc := json.NewEncoder(&text)
		enc.SetEscapeHTML(false) // labels such as "<10>" read as they are
		if err := enc.Encode(v); err != nil {
			return errors.Wrapf(err, "saving activations: the %s", k)
		}
		metadata[k] = strings.TrimSuffix(text.String(), "\n")
	}
	tensors := make([]safetensors.Tensor, 0, len(saved))
	for _, s := range saved {
		t, err := c.TL(s.Lab)
		if err != nil {
			return errors.Wrap(err, "saving activations")
		}
		st := safetensors.Tensor{Name: s.File, DType: safetensors.F32, Shape: t.Shape}
		if t.Dtype() == tensor.Float64 {
			st.DType, st.Data = safetensors.F64, safetensors.EncodeFloat64(t.Float64s())
		} else {
			st.Data = safetensors.EncodeFloat32(t.Float32s())
		}
		tensors = append(tensors, st)
	}
	return safetensors.Write(w, tensors, metadata)
}
