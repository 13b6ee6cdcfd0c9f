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
