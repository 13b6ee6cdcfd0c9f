package tokenizer

import (
	"fmt"
	"strconv"

	"github.com/pkg/errors"
)

// IDs is the tokenizer of a model opened without tokenizer files: its n
// tokens print as their ids ("<464>") and text cannot be encoded (the model
// reads token ids only).
func IDs(n int) Tokenizer { return ids(n) }

type ids int

// ErrNoTokenizer is Encode's error when a model has no tokenizer.
var ErrNoTokenizer = errors.New("the model has no tokenizer files: give token ids (-tokens)")

func (t ids) Encode(string) ([]int, error) { return nil, ErrNoTokenizer }
func (t ids) Token(id int) []byte          { return []byte("<" + strconv.Itoa(id) + ">") }
func (t ids) Size() int                    { return int(t) }
func (t ids) EOS() int                     { return -1 }
func (t ids) BOS() int                     { return -1 }
func (t ids) Name() string                 { return fmt.Sprintf("none (%d token ids)", int(t)) }

// Unbuilt is IDs(n) for a model whose tokenizer files are there but could
// not be built: Encode's error gives the reason (why, one line) instead of
// saying there are none, and still matches ErrNoTokenizer (errors.Is).
func Unbuilt(n int, why error) Tokenizer { return unbuilt{ids(n), why} }

type unbuilt struct {
	ids
	why error
}

func (t unbuilt) Encode(string) ([]int, error) { return nil, &NotBuiltError{t.why} }

// NotBuiltError is Unbuilt's Encode error; Why is the reason.
type NotBuiltError struct{ Why error }

func (e *NotBuiltError) Error() string {
	return "its tokenizer was not built (" + e.Why.Error() + "): give token ids (-tokens)"
}

func (e *NotBuiltError) Is(target error) bool { return target == ErrNoTokenizer }
