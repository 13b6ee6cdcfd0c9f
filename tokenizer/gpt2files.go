package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/pkg/errors"
)

// maxFileBytes bounds every tokenizer file read: GPT-2's vocab.json is 1 MB,
// the largest tokenizer.json in use about 35 MB.
const maxFileBytes = 64 << 20

// fileBound is what maxFileBytes bounds, for its message.
const fileBound = "a tokenizer file may hold"

// readTokenizerFile reads a whole tokenizer file the user named, refusing
// anything but a regular file of at most maxFileBytes.
func readTokenizerFile(path string) ([]byte, error) {
	return safefile.ReadLimit(path, maxFileBytes, fileBound)
}

// ReadGPT2Files reads a byte-level BPE tokenizer as GPT-2 ships it: vocab.json
// (token -> id) and merges.txt (a "#version" line, then one merge a line,
// "a b", in rank order). <|endoftext|> is its end and beginning of text.
func ReadGPT2Files(vocabPath, mergesPath string) (Tokenizer, error) {
	rawVocab, err := readTokenizerFile(vocabPath)
	if err != nil {
		return nil, err
	}
	rawMerges, err := readTokenizerFile(mergesPath)
	if err != nil {
		return nil, err
	}
	t, err := parseGPT2Files(rawVocab, rawMerges, vocabPath, mergesPath)
	if err != nil {
		return nil, err // not a nil *bpeTokenizer inside a non-nil Tokenizer
	}
	return t, nil
}

// DecodeGPT2Files is ReadGPT2Files of the contents of vocab.json and
// merges.txt its caller opened (so that the tokenizer is built from the
// bytes the caller hashes), named vocabName and mergesName in errors, with
// the same bound on their sizes.
func DecodeGPT2Files(vocab, merges safefile.Sized, vocabName, mergesName string) (Tokenizer, error) {
	rawVocab, err := safefile.ReadSized(vocab, vocabName, maxFileBytes, fileBound)
	if err != nil {
		return nil, err
	}
	rawMerges, err := safefile.ReadSized(merges, mergesName, maxFileBytes, fileBound)
	if err != nil {
		return nil, err
	}
	t, err := parseGPT2Files(rawVocab, rawMerges, vocabName, mergesName)
	if err != nil {
		return nil, err // not a nil *bpeTokenizer inside a non-nil Tokenizer
	}
	return t, nil
}

// parseGPT2Files builds a tokenizer from the contents of vocab.json and
// merges.txt, naming them vocabName and mergesName in errors.
func parseGPT2Files(rawVocab, rawMerges []byte, vocabName, mergesName string) (*bpeTokenizer, error) {
	vocab, err := parseVocab(rawVocab)
	if err != nil {
		return nil, errors.Wrap(err, vocabName)
	}
	merges, lines, err := parseMergesText(rawMerges)
	if err != nil {
		return nil, errors.Wrap(err, mergesName)
	}
	return newGPT2BPE(bpeSpec{
		vocab: vocab, merges: merges,
		vocabWhere: vocabName, mergesFile: mergesName,
		mergeWhere: func(i int) string { return fmt.Sprintf("line %d", lines[i]) },
	})
}

// parseVocab reads a JSON object of token -> id. Ids are checked against
// one another when the model is built.
func parseVocab(raw []byte) (map[string]int, error) {
	if err := checkJSON(raw); err != nil {
		return nil, err
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, errors.New("the vocabulary is not a JSON object of token: id")
	}
	if len(entries) > maxVocab {
		return nil, errors.Errorf("%d tokens is more than the %d a vocabulary may hold", len(entries), maxVocab)
	}
	vocab := make(map[string]int, len(entries))
	for name, rawID := range entries {
		id, ok := parseJSONInt(rawID)
		if !ok {
			return nil, errors.Errorf("token %s has id %s: want an integer", msg.Quote(name), showJSON(rawID))
		}
		vocab[name] = id
	}
	return vocab, nil
}

// parseMergesText reads merges.txt: an optional first line "#version: ...",
// then one merge a line, two tokens and one space ("Ġ t"); a final newline
// and \r\n line ends are allowed. lines[i] is merge i's line number.
func parseMergesText(raw []byte) (merges [][2]string, lines []int, err error) {
	text := strings.TrimSuffix(string(raw), "\n")
	if text == "" {
		return nil, nil, nil
	}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if i == 0 && strings.HasPrefix(line, "#version") {
			continue
		}
		a, b, ok := strings.Cut(line, " ")
		if !ok || a == "" || b == "" || strings.Contains(b, " ") {
			return nil, nil, errors.Errorf("line %d: %s is not a merge: want two tokens and one space (\"a b\")", i+1, msg.Quote(line))
		}
		merges = append(merges, [2]string{a, b})
		lines = append(lines, i+1)
	}
	return merges, lines, nil
}
