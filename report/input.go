package report

import (
	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/cli"
)

// userTokens is the sequence the user gave: Options.Tokens (ids, or token
// names) or Options.Text in the model's tokenizer; nil when neither.
func userTokens(s Subject, o Options) ([]int, error) {
	switch {
	case o.Tokens != "" && o.Text != "":
		return nil, errors.New("-tokens and -text both give the sequence; use one")
	case o.Text == "":
		return cli.ParseTokens(o.Tokens, s.TokenNames)
	case s.Tokenizer == nil:
		return nil, errors.Errorf("-text: %s's task (%s) has no tokenizer; give its tokens with -tokens", o.Checkpoint, s.Task.Name())
	}
	ids, err := s.Tokenizer.Encode(o.Text)
	if err != nil {
		return nil, errors.Wrap(err, "-text")
	}
	if len(ids) == 0 {
		return nil, errors.New("-text is empty: give at least one character")
	}
	return ids, nil
}

// tokensFlag is the flag that gave the sequence shown, for the errors it
// causes: -text or -tokens.
func tokensFlag(o Options) string {
	if o.Text != "" {
		return "-text"
	}
	return "-tokens"
}
