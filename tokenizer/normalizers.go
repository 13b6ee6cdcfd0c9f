package tokenizer

import (
	"fmt"
	"strings"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/pkg/errors"
	"golang.org/x/text/unicode/norm"
)

// readNormalizer builds a tokenizer.json's normalizer, the value of key:
// nil for none; the Unicode forms NFC, NFD, NFKC and NFKD; Prepend (before
// text that is not empty); Replace of a String; a Sequence of them, each
// on what the one before made.
func readNormalizer(key string, c component) (func(string) string, error) {
	switch c.Type {
	case "":
		return nil, nil
	case "NFC":
		return norm.NFC.String, nil
	case "NFD":
		return norm.NFD.String, nil
	case "NFKC":
		return norm.NFKC.String, nil
	case "NFKD":
		return norm.NFKD.String, nil
	case "Prepend":
		if c.Prepend == nil {
			return nil, errors.Errorf("%s has no prepend", key)
		}
		prefix := *c.Prepend
		return func(s string) string {
			if s == "" {
				return s
			}
			return prefix + s
		}, nil
	case "Replace":
		return readReplace(key, c)
	case "Sequence":
		return readNormalizerSequence(key, c)
	}
	return nil, errors.Errorf("%s.type is %s: built are NFC, NFD, NFKC, NFKD, Prepend, Replace of a String and a Sequence of them",
		key, msg.Quote(c.Type))
}

// readReplace builds a Replace of a String pattern by content, the
// normalizer's or the decoder's.
func readReplace(key string, c component) (func(string) string, error) {
	switch {
	case c.Pattern.String == nil || c.Pattern.Regex != nil:
		return nil, errors.Errorf("%s.pattern is not a String: built is Replace of a String", key)
	case *c.Pattern.String == "":
		return nil, errors.Errorf("%s.pattern.String is empty", key)
	case c.Content == nil:
		return nil, errors.Errorf("%s has no content", key)
	}
	from, to := *c.Pattern.String, *c.Content
	return func(s string) string { return strings.ReplaceAll(s, from, to) }, nil
}

// readNormalizerSequence builds a Sequence of normalizers.
func readNormalizerSequence(key string, c component) (func(string) string, error) {
	var steps []func(string) string
	for i, raw := range c.Normalizers {
		partKey := fmt.Sprintf("%s.normalizers[%d]", key, i)
		part, err := readComponent(partKey, raw)
		if err != nil {
			return nil, err
		}
		step, err := readNormalizer(partKey, part)
		if err != nil {
			return nil, err
		}
		if step != nil {
			steps = append(steps, step)
		}
	}
	switch len(steps) {
	case 0:
		return nil, nil
	case 1:
		return steps[0], nil
	}
	return func(s string) string {
		for _, step := range steps {
			s = step(s)
		}
		return s
	}, nil
}
