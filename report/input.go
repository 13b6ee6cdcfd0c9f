package report

import (
	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/cli"
)

// userTokens is the sequence the user gave: Options.Tokens (ids, or token
// names) or Options.Text in the model's tokenizer; nil when neither.
func userTokens(s Subject, o Options) ([]int, error) {
	return givenTokens(s, o.Checkpoint, o.Tokens, o.Text, "-tokens", "-text")
}

// givenTokens is a sequence given as ids or token names (tokens, the flag
// tokensFlag) or as text in the model's tokenizer (text, textFlag); nil
// when neither.
func givenTokens(s Subject, checkpoint, tokens, text, tokensFlag, textFlag string) ([]int, error) {
	switch {
	case tokens != "" && text != "":
		return nil, errors.Errorf("%s and %s both give the sequence; use one", tokensFlag, textFlag)
	case text == "":
		return cli.ParseTokensFlag(tokensFlag, tokens, s.TokenNames)
	case s.Tokenizer == nil:
		return nil, errors.Errorf("%s: %s's task (%s) has no tokenizer; give its tokens with %s", textFlag, checkpoint, s.Task.Name(), tokensFlag)
	}
	ids, err := s.Tokenizer.Encode(text)
	if err != nil {
		return nil, errors.Wrap(err, textFlag)
	}
	if len(ids) == 0 {
		return nil, errors.Errorf("%s is empty: give at least one character", textFlag)
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
