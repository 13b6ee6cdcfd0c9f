package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outsideNames are the CamelCase words package docs use for what is not
// the module's own: Gorgonia's API, other projects' classes and names.
var outsideNames = map[string]bool{
	"Qwen3ForCausalLM": true, "Gemma2ForCausalLM": true, "Gemma3ForCausalLM": true, "Gemma3ForConditionalGeneration": true,
	"FlatIterator": true, "NewConstant": true, "StdEng": true, "TapeMachine": true, "FloatStorage": true,
	"IntersectionObserver": true, "JavaScript": true, "PyTorch": true, "TransformerLens": true,
	"LlamaForCausalLM": true, "MistralForCausalLM": true, "Qwen2ForCausalLM": true,
	"SentencePiece": true, "TinyLlama": true, "Conv1D": true, "LayerNorms": true, "MiB": true,
	"NeoX": true, "Phi3ForCausalLM": true, "Olmo2ForCausalLM": true, "TinyStories": true,
	"ByteLevel": true, "TemplateProcessing": true, // Hugging Face tokenizers' parts
}

// TestDocGoNamesExist: every Go name a package's doc.go gives (a CamelCase
// word: ParseConfig, Opened.Inputs) is declared somewhere in the module, or
// is one of outsideNames, so a doc does not send a reader to a function that
// was renamed or never was. Add a word to outsideNames only when it names
// what is not the module's.
func TestDocGoNamesExist(t *testing.T) {
	declared, docs := map[string]bool{}, []string{}
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != "../.." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go"):
			return nil
		case d.Name() == "doc.go":
			docs = append(docs, path)
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				declared[id.Name] = true
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	camel := regexp.MustCompile(`\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b`)
	for _, doc := range docs {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range camel.FindAllString(string(raw), -1) {
			if !declared[name] && !outsideNames[name] {
				t.Errorf("%s names %s, which nothing in the module declares", strings.TrimPrefix(doc, "../../"), name)
				outsideNames[name] = true // once
			}
		}
	}
}
