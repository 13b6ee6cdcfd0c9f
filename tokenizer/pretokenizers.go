package tokenizer

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/pkg/errors"
)

// builtPreTokenizers names the pre-tokenizers built, for a refusal.
const builtPreTokenizers = "built are ByteLevel, Split, Metaspace, Digits, Punctuation and a Sequence of them"

// readPreTokenizer builds a tokenizer.json's pre-tokenizer, the value of
// key: none (the split is one piece), one of those built, or a Sequence
// of them. name names a split written by hand ("Llama 3's"), for the
// tokenizer's name; byteLevel says it ends in ByteLevel, which makes the model a
// byte-level BPE; ByteLevel comes last (it writes the text as GPT-2's
// characters, which no later pre-tokenizer is built to read).
func readPreTokenizer(key string, c component) (pre preTokenizer, name string, byteLevel bool, err error) {
	switch c.Type {
	case "":
		return wholeSplit, "", false, nil
	case "Sequence":
		return readPreTokenizerSequence(key, c)
	case "ByteLevel":
		pre, name, err = readByteLevel(key, c)
		return pre, name, true, err
	case "Split":
		pre, name, err = readSplit(key, c)
	case "Metaspace":
		pre, err = readMetaspace(key, c)
	case "Digits":
		behavior := behaviorContiguous
		if c.IndividualDigits {
			behavior = behaviorIsolated
		}
		pre = splitBy(charMatches(unicode.IsNumber), behavior, false)
	case "Punctuation":
		var behavior splitBehavior
		if behavior, err = readBehavior(key, c.Behavior, behaviorIsolated); err == nil {
			pre = splitBy(charMatches(isPunctuation), behavior, false)
		}
	default:
		return nil, "", false, errors.Errorf("%s.type is %s: %s", key, msg.Quote(c.Type), builtPreTokenizers)
	}
	return pre, name, false, err
}

// readPreTokenizerSequence builds a Sequence: each part on the pieces of
// the one before.
func readPreTokenizerSequence(key string, c component) (preTokenizer, string, bool, error) {
	pre, name, byteLevel := preTokenizer(wholeSplit), "", false
	for i, raw := range c.PreTokenizers {
		partKey := fmt.Sprintf("%s.pretokenizers[%d]", key, i)
		if byteLevel {
			return nil, "", false, errors.Errorf("%s follows a ByteLevel: built is ByteLevel last", partKey)
		}
		part, err := readComponent(partKey, raw)
		if err != nil {
			return nil, "", false, err
		}
		next, partName, partByteLevel, err := readPreTokenizer(partKey, part)
		if err != nil {
			return nil, "", false, err
		}
		if i == 0 {
			pre = next
		} else {
			pre = chain(pre, next)
		}
		byteLevel = byteLevel || partByteLevel
		if name == "" {
			name = partName
		}
	}
	return pre, name, byteLevel, nil
}

// readByteLevel builds a ByteLevel pre-tokenizer: GPT-2's split (written
// by hand, gpt2PieceLen) unless use_regex is false, after a space put
// before a split that does not start with one when add_prefix_space.
func readByteLevel(key string, c component) (preTokenizer, string, error) {
	pre := byPieceLen(gpt2PieceLen)
	if c.UseRegex != nil && !*c.UseRegex {
		pre = wholeSplit
	}
	if c.AddPrefixSpace != nil && *c.AddPrefixSpace {
		split := pre
		pre = func(s string, at int, yield func(string, int) error) error {
			if !strings.HasPrefix(s, " ") {
				s = " " + s
			}
			return split(s, at, yield)
		}
	}
	return pre, "", nil
}

// readSplit builds a Split by a String (found as it is) or a Regex (run by
// regexp2, compileSplitRegex; Llama 3's and Qwen 2's patterns by hand,
// handSplits, where the behavior keeps every piece).
func readSplit(key string, c component) (preTokenizer, string, error) {
	behavior, err := readBehavior(key, c.Behavior, "")
	if err != nil {
		return nil, "", err
	}
	switch {
	case c.Pattern.String != nil && c.Pattern.Regex == nil:
		return splitBy(literalMatches(*c.Pattern.String), behavior, c.Invert), "", nil
	case c.Pattern.Regex == nil || c.Pattern.String != nil:
		return nil, "", errors.Errorf("%s.pattern has neither or both of String and Regex: want one", key)
	}
	pattern := *c.Pattern.Regex
	if hand, ok := handSplits[pattern]; ok && keepsEveryPiece(behavior, c.Invert) {
		return byPieceLen(hand.pieceLen), hand.name, nil
	}
	find, err := compileSplitRegex(key+".pattern.Regex", pattern)
	if err != nil {
		return nil, "", err
	}
	return splitBy(find, behavior, c.Invert), "", nil
}

// keepsEveryPiece says a Split by a pattern that matches every character
// makes each match a piece: Isolated, or the matches kept by Removed with
// invert (cl100k's files write the split so).
func keepsEveryPiece(behavior splitBehavior, invert bool) bool {
	return behavior == behaviorIsolated && !invert || behavior == behaviorRemoved && invert
}

// readBehavior reads a split behavior; "" is def, or refused without one.
func readBehavior(key, behavior string, def splitBehavior) (splitBehavior, error) {
	if behavior == "" && def != "" {
		return def, nil
	}
	for _, b := range splitBehaviors {
		if string(b) == behavior {
			return b, nil
		}
	}
	return "", errors.Errorf("%s.behavior is %s: want Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous", key, msg.Quote(behavior))
}

// readMetaspace builds a Metaspace pre-tokenizer with "▁" for a space.
func readMetaspace(key string, c component) (preTokenizer, error) {
	if c.Replacement != metaspace {
		return nil, errors.Errorf("%s.replacement is %s: built is %s", key, msg.Quote(c.Replacement), msg.Quote(metaspace))
	}
	scheme, err := readPrependScheme(key, c)
	if err != nil {
		return nil, err
	}
	rewrite := metaspaceRewrite(scheme)
	pieces := byPieceLen(metaspacePieceLen)
	if c.Split != nil && !*c.Split {
		pieces = wholeSplit
	}
	return func(s string, at int, yield func(string, int) error) error {
		return pieces(rewrite(s, at == 0), at, yield)
	}, nil
}

// readPrependScheme reads when a Metaspace puts "▁" first: prepend_scheme,
// or the older add_prefix_space.
func readPrependScheme(key string, c component) (prependScheme, error) {
	scheme := prependAlways
	if c.PrependScheme != nil {
		scheme = prependScheme(*c.PrependScheme)
	}
	if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
		scheme = prependNever
	}
	if scheme != prependAlways && scheme != prependFirst && scheme != prependNever {
		return "", errors.Errorf("%s.prepend_scheme is %s: want always, first or never", key, msg.Quote(string(scheme)))
	}
	return scheme, nil
}
