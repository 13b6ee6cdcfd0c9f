package hf

import (
	"slices"
	"sort"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/model"
)

// halfDtypes are the dtypes a mapped model keeps in place.
var halfDtypes = []string{safetensors.BF16, safetensors.F16}

// storedParams are the parameters Options.Map keeps in their files: every
// matrix whose tensors are all BF16 or all F16 (one dtype), stored in the
// project's layout and each a whole run of its rows (storedAsRuns), so the
// kernels read them as they lie. GPT-2's Conv1D weights, stored
// transposed, are read into float32 as without Map (GPT-2's files are
// F32), as are the vectors (norms, biases), a few MB even at 8B.
func storedParams(cfg model.Config, sources map[slot]*source) map[string]bool {
	bySlot := slotsOf(sources)
	stored := map[string]bool{}
	for _, spec := range cfg.ParamSpecs() {
		parts := bySlot[spec.Name]
		if len(spec.Shape) == 2 && len(parts) > 0 && slices.Contains(halfDtypes, parts[0].info.DType) && storedAsRuns(spec, parts) {
			stored[spec.Name] = true
		}
	}
	return stored
}

// storedAsRuns reports whether parts, in row order, are spec's rows as
// they lie: one dtype, none transposed, each tensor exactly the rows its
// slot starts, one after another. A tensor that fills rows of several
// parameters, or rows apart, is not (it is read into float32).
func storedAsRuns(spec model.ParamSpec, parts []*source) bool {
	row := 0
	for _, s := range parts {
		if s.transpose || s.split != nil || s.info.DType != parts[0].info.DType || len(s.info.Shape) != 2 || s.info.Shape[1] != spec.Shape[1] || s.part.first != row {
			return false
		}
		row += s.info.Shape[0]
	}
	return row == spec.Shape[0]
}

// slotsOf lists each parameter's sources in row order.
func slotsOf(sources map[slot]*source) map[string][]*source {
	out := map[string][]*source{}
	for sl, s := range sources {
		out[sl.param] = append(out[sl.param], s)
	}
	for _, list := range out {
		sort.Slice(list, func(i, j int) bool { return list[i].part.first < list[j].part.first })
	}
	return out
}

// mappedBytes are the bytes of the tensors of the stored parameters.
func mappedBytes(sources map[slot]*source, stored map[string]bool) (n float64) {
	for sl, s := range sources {
		if stored[sl.param] {
			n += float64(s.info.End - s.info.Begin)
		}
	}
	return n
}

// checkMapped refuses a mapped model whose weights cannot stay resident:
// the stored tensors' file bytes and the float32 copies of the rest
// against available (0: MemAvailable, model.CheckResident), and the
// copies alone against maxBytes (0: model.MaxMemory), before any file is
// mapped or read.
func checkMapped(dir string, cfg model.Config, sources map[slot]*source, stored map[string]bool, maxBytes, available float64) error {
	if maxBytes == 0 {
		maxBytes = model.MaxMemory
	}
	mapped, copied := mappedBytes(sources, stored), 0.0
	for _, spec := range cfg.ParamSpecs() {
		if !stored[spec.Name] {
			n := 4.0
			for _, d := range spec.Shape {
				n *= float64(d)
			}
			copied += n
		}
	}
	if copied > maxBytes {
		return errors.Errorf("%s: the weights read into float32 take %s, more than the %s limit", dir, msg.Bytes(copied), msg.Bytes(maxBytes))
	}
	what := dir + ": the model's weights (" + msg.Bytes(mapped) + " mapped from its files, " + msg.Bytes(copied) + " read into float32)"
	if available > 0 {
		return model.CheckResidentWithin(mapped+copied, available, what)
	}
	return model.CheckResident(mapped+copied, what)
}

// mapStored maps the files that hold stored parameters, each once, and
// makes each stored parameter's ops.Stored of its tensors' bytes in place,
// one part per tensor (Llama's q_proj, k_proj and v_proj are three parts
// of the fused qkv). The mappings outlive the files, which Load closes.
func mapStored(w *weights, sources map[slot]*source, stored map[string]bool) (map[string]any, []*safetensors.Mapping, error) {
	mappings := map[*weightFile]*safetensors.Mapping{}
	var all []*safetensors.Mapping
	unmap := func() {
		for _, m := range all {
			m.Close()
		}
	}
	values := map[string]any{}
	for param, parts := range slotsOf(sources) {
		if !stored[param] {
			continue
		}
		s := &ops.Stored{Name: param, DType: parts[0].info.DType, Cols: parts[0].info.Shape[1]}
		for _, src := range parts {
			m, ok := mappings[src.file]
			if !ok {
				var err error
				if m, err = src.file.st.Map(); err != nil {
					unmap()
					return nil, nil, errors.Wrapf(err, "%s", src.file.path)
				}
				mappings[src.file], all = m, append(all, m)
			}
			data, _, err := m.Bytes(src.info.Name)
			if err != nil {
				unmap()
				return nil, nil, errors.Wrapf(err, "%s", src.file.path)
			}
			s.Parts = append(s.Parts, ops.StoredPart{Rows: src.info.Shape[0], Data: data, File: src.file.path, Tensor: src.info.Name})
			s.Rows += src.info.Shape[0]
		}
		values[param] = s
	}
	return values, all, nil
}
