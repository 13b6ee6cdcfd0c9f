package cli

import (
	"unicode/utf8"

	"github.com/pkg/errors"
)

// CheckText refuses text given on the command line (sample's -prompt or
// -text, inspect's -text) that is not valid UTF-8, naming the flag and the
// offset of the first bad byte: a tokenizer reads text, and would drop or
// replace a byte it cannot read without a word.
func CheckText(flagName, s string) error {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return errors.Errorf("%s: byte %d (%#02x) is not valid UTF-8; give UTF-8 text, or the ids with -tokens", flagName, i, s[i])
		}
		i += size
	}
	return nil
}
