package cli

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/internal/msg"
)

// TokenNames are the names -tokens reads besides ids (open.TokenNames
// gives a model's).
type TokenNames struct {
	// Names maps each name to its id: a toy task's non-numeric labels
	// ("SEP"), a model's special tokens, or every character of a
	// character-level model, as its labels hold them ("␣" for a space).
	Names map[string]int
	// Characters says the names are a character-level model's characters:
	// every field is then a character (a digit is the digit, a comma the
	// comma), and an id is written #N.
	Characters bool
}

// ParseTokens reads -tokens: fields separated by whitespace, and by commas
// unless a comma is one of the names. A field is, in this order: #N, the
// id N; a name exactly as the model's labels spell it, or as inspect
// prints it escaped (\n for a newline); on a model that is not
// character-level, a decimal id, or a name of several letters in another
// case when only one name spells it so ("sep" for SEP). "" gives nil.
// Ranges are checked against the model later (example); the message quotes
// at most a few dozen bytes of a bad token, so it stays one readable line.
func ParseTokens(s string, names TokenNames) ([]int, error) {
	return ParseTokensFlag("-tokens", s, names)
}

// ParseTokensFlag is ParseTokens for a flag of another name (inspect's
// -corrupt-tokens), which its errors name.
func ParseTokensFlag(flagName, s string, names TokenNames) ([]int, error) {
	fields := strings.FieldsFunc(s, separator(names.Names))
	if len(fields) == 0 {
		if strings.TrimSpace(s) != "" {
			return nil, errors.Errorf("%s %s: no token ids", flagName, msg.Quote(s))
		}
		return nil, nil
	}
	lookup := names.lookup()
	ids := make([]int, len(fields))
	for i, f := range fields {
		id, err := names.token(f, lookup)
		if err != nil {
			return nil, errors.Errorf("%s: %s (token %d) %v", flagName, msg.Quote(f), i, err)
		}
		ids[i] = id
	}
	return ids, nil
}

// separator splits -tokens at whitespace, and at commas unless a comma is
// a token's name.
func separator(names map[string]int) func(rune) bool {
	_, commaIsName := names[","]
	return func(r rune) bool { return unicode.IsSpace(r) || r == ',' && !commaIsName }
}

// lookup is every spelling of a name that reads as its id: the name and
// its escaped form.
func (n TokenNames) lookup() map[string]int {
	all := make(map[string]int, len(n.Names))
	for name, id := range n.Names {
		all[escape.Label(name)] = id
	}
	for name, id := range n.Names {
		all[name] = id // a name as it is wins over another's escape
	}
	return all
}

// token reads one field; the error completes "-tokens: "f" (token i) ...".
func (n TokenNames) token(f string, lookup map[string]int) (int, error) {
	if digits, ok := strings.CutPrefix(f, "#"); ok && decimal.MatchString(digits) {
		return atoi(digits)
	}
	if id, ok := lookup[f]; ok {
		return id, nil
	}
	if n.Characters {
		if decimal.MatchString(f) {
			return 0, errors.Errorf("is not a character of the model; give an id as #%s, or text with -text", strings.TrimLeft(f, "+"))
		}
		return 0, errors.Errorf("is not a character of the model's %d%s", len(n.Names), n.listed())
	}
	if decimal.MatchString(f) {
		return atoi(f)
	}
	if id, ok := n.foldedName(f); ok {
		return id, nil
	}
	return 0, errors.Errorf("is not a number or a token name%s", n.listed())
}

func atoi(f string) (int, error) {
	id, err := strconv.Atoi(f)
	if err != nil {
		return 0, errors.New("is too large to be a token id")
	}
	return id, nil
}

// foldedName is the id of the one name of several letters that f spells
// in another case; a single character never folds (k is not K).
func (n TokenNames) foldedName(f string) (int, bool) {
	found, id := 0, 0
	for name, named := range n.Names {
		if len([]rune(name)) > 1 && strings.EqualFold(name, f) {
			found, id = found+1, named
		}
	}
	return id, found == 1
}

// listed is " (SEP)" or " characters (a, b, ...)" for the error of an
// unknown token, each name escaped as inspect prints it: a text model's
// names are its characters, controls and bidi overrides among them.
func (n TokenNames) listed() string {
	if len(n.Names) == 0 {
		return ""
	}
	list := make([]string, 0, len(n.Names))
	for name := range n.Names {
		list = append(list, escape.Label(name))
	}
	slices.Sort(list)
	if len(list) > maxNamesShown {
		list = append(list[:maxNamesShown], fmt.Sprintf("and %d more", len(n.Names)-maxNamesShown))
	}
	if n.Characters {
		return " characters (" + strings.Join(list, " ") + "); give an id as #N, or text with -text"
	}
	return " (" + strings.Join(list, ", ") + ")"
}

// maxNamesShown is the most token names an error lists, so that a text
// model's vocabulary of thousands of characters keeps it one short line.
const maxNamesShown = 24

// decimal matches what strconv.Atoi would read but for its range.
var decimal = regexp.MustCompile(`^[+-]?[0-9]+$`)
