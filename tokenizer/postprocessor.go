package tokenizer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/pkg/errors"
)

// template is what a post-processor puts around a text's ids, as Hugging
// Face's encode does (add_special_tokens): ids before and after.
type template struct {
	before, after []int
}

// readPostProcessor reads a post-processor, the value of key: none or
// ByteLevel (which only moves offsets) put nothing; TemplateProcessing puts
// its special tokens around the text; a Sequence does each in turn.
func readPostProcessor(key string, raw []byte) (template, error) {
	c, err := readComponent(key, raw)
	if err != nil {
		return template{}, err
	}
	switch c.Type {
	case "", "ByteLevel":
		return template{}, nil
	case "TemplateProcessing":
		return readTemplate(key, c)
	case "Sequence":
		var t template
		for i, p := range c.Processors {
			inner, err := readPostProcessor(fmt.Sprintf("%s.processors[%d]", key, i), p)
			if err != nil {
				return template{}, err
			}
			t = template{before: slices.Concat(inner.before, t.before), after: slices.Concat(t.after, inner.after)}
		}
		return t, nil
	}
	return template{}, errors.Errorf("%s.type is %s: built are ByteLevel, TemplateProcessing and a Sequence of them", key, msg.Quote(c.Type))
}

// readTemplate reads a TemplateProcessing's single-sequence template:
// special tokens, the text ($A), special tokens; each special token's ids
// are those its special_tokens gives.
func readTemplate(key string, c component) (template, error) {
	var t template
	seen := false
	for _, p := range c.Single {
		switch {
		case p.Sequence != nil && p.Sequence.ID == "A" && !seen:
			seen = true
		case p.SpecialToken != nil:
			special, ok := c.SpecialTokens[p.SpecialToken.ID]
			if !ok {
				return template{}, errors.Errorf("%s.special_tokens has no %s, which single puts around the text", key, msg.Quote(p.SpecialToken.ID))
			}
			if seen {
				t.after = append(t.after, special.IDs...)
			} else {
				t.before = append(t.before, special.IDs...)
			}
		default:
			return template{}, errors.Errorf("%s.single is %s: built is special tokens, \"$A\" once, special tokens", key, msg.Quote(showTemplate(c)))
		}
	}
	if !seen {
		return template{}, errors.Errorf("%s.single is %s: built is special tokens, \"$A\" once, special tokens", key, msg.Quote(showTemplate(c)))
	}
	return t, nil
}

// showTemplate writes a template as Hugging Face's shorthand: "<s> $A".
func showTemplate(c component) string {
	var parts []string
	for _, p := range c.Single {
		switch {
		case p.SpecialToken != nil:
			parts = append(parts, p.SpecialToken.ID)
		case p.Sequence != nil:
			parts = append(parts, "$"+p.Sequence.ID)
		default:
			parts = append(parts, "?")
		}
	}
	return strings.Join(parts, " ")
}
