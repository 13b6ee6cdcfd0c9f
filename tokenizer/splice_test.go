package tokenizer

import (
	"bytes"
	"reflect"
	"testing"
)

// decodedBothWays decodes raw through the splicer, and with the splicer
// passing everything on to encoding/json's decoder (jsonStream's own
// reading of the vocabulary and merges).
func decodedBothWays(raw []byte) (spliced, whole decodedTokenizerJSON, splicedErr, wholeErr error) {
	spliced, splicedErr = decodeTokenizerJSON(bytes.NewReader(raw))
	src := newSplicer(bytes.NewReader(raw))
	src.passAll = true
	whole, wholeErr = decodeThrough(src)
	return spliced, whole, splicedErr, wholeErr
}

// sameMerges says two decodings hold the same merges, as names or ids.
func sameMerges(spliced, whole decodedTokenizerJSON) bool {
	if spliced.mergeIDs == nil {
		return reflect.DeepEqual(spliced.merges, whole.merges)
	}
	if len(spliced.mergeIDs) != len(whole.merges) {
		return false
	}
	for i, ids := range spliced.mergeIDs {
		pair := whole.merges[i]
		want := [3]int32{int32(whole.vocab[pair[0]]), int32(whole.vocab[pair[1]]), int32(whole.vocab[pair[0]+pair[1]])}
		if ids != want {
			return false
		}
	}
	return true
}

// FuzzSplicerAgrees: the splicer, which reads model.vocab and model.merges
// itself, accepts what encoding/json's reading accepts and gives the same
// vocabulary and merges, and refuses what it refuses.
func FuzzSplicerAgrees(f *testing.F) {
	f.Add(tinyTokenizerJSON(f, nil))
	f.Add(tinySentencePieceJSON(f, nil))
	f.Add(badMerge254(f, 2))
	for _, seed := range []string{
		`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}}`,
		`{"model":{"type":"BPE","merges":[["a","b"]],"vocab":{"a":0,"b":1,"ab":2}}}`,
		`{"model":{"type":"BPE","vocab":{"\"":0,"\\":1,"\"\\":2, "\u00e9" : 3},"merges":[["\"","\\"] , "a b"]}}`,
		`{"model":{"type":"BPE","vocab":{"a":01,"b":-0,"c":1e2,"d":"3","e":[1],"f":null},"merges":[["a,","b"],["a"],"a  b",5]}}`,
		`{"model":{"vocab":null,"merges":null,"type":"BPE"},"model2":{"vocab":{"x":1}}}`,
		`{"model" : { "vocab" : { "a" : 0 , "b":1,"ab":2 } , "merges" : [ [ "a" , "b" ] ] } }`,
		"{\"model\":{\"vocab\":{\"a\xff\":0}}}",
		`{"model":{"vocab":{"a":0,"a":1}}}`,
		`{"model":{"vocab":{"a":0}`,
		`{"model":{"vocab":{"a":0}},"model":{}}`,
		`{"model":{"vocab":{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		spliced, whole, splicedErr, wholeErr := decodedBothWays(raw)
		if (splicedErr == nil) != (wholeErr == nil) {
			t.Fatalf("spliced: %v; whole: %v", splicedErr, wholeErr)
		}
		if splicedErr != nil {
			return
		}
		if !reflect.DeepEqual(spliced.vocab, whole.vocab) || !sameMerges(spliced, whole) || !reflect.DeepEqual(spliced.file, whole.file) {
			t.Fatalf("spliced and whole decode differently: %v %v %v against %v %v", spliced.vocab, spliced.merges, spliced.mergeIDs, whole.vocab, whole.merges)
		}
	})
}
