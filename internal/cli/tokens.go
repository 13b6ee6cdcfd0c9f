package cli

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/internal/msg"
)

// ParseTokens reads whitespace- or comma-separated decimal ids or token
// names (names, case-insensitive: "SEP"); "" gives nil. Ranges are checked
// against the model later (example); the message quotes at most a few dozen
// bytes of a bad token, so it stays one readable line.
func ParseTokens(s string, names map[string]int) ([]int, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	if len(fields) == 0 {
		if strings.TrimSpace(s) != "" {
			return nil, errors.Errorf("-tokens %s: no token ids", msg.Quote(s))
		}
		return nil, nil
	}
	ids := make([]int, len(fields))
	for i, f := range fields {
		id, err := strconv.Atoi(f)
		if errors.Is(err, strconv.ErrRange) && decimal.MatchString(f) {
			return nil, errors.Errorf("-tokens: %s (token %d) is too large to be a token id", msg.Quote(f), i)
		}
		if named, ok := names[strings.ToUpper(f)]; ok && err != nil {
			id, err = named, nil
		}
		if err != nil {
			return nil, errors.Errorf("-tokens: %s (token %d) is not a number%s", msg.Quote(f), i, orNames(names))
		}
		ids[i] = id
	}
	return ids, nil
}

// orNames is " or a token name (SEP)" for the error of an unknown token,
// each name escaped: a text model's names are its characters, controls and
// bidi overrides among them.
func orNames(names map[string]int) string {
	if len(names) == 0 {
		return ""
	}
	list := make([]string, 0, len(names))
	for name := range names {
		list = append(list, escape.Label(name))
	}
	slices.Sort(list)
	if len(list) > maxNamesShown {
		list = append(list[:maxNamesShown], fmt.Sprintf("and %d more", len(names)-maxNamesShown))
	}
	return " or a token name (" + strings.Join(list, ", ") + ")"
}

// maxNamesShown is the most token names an error lists, so that a text
// model's vocabulary of thousands of characters keeps it one short line.
const maxNamesShown = 24

// decimal matches what strconv.Atoi would read but for its range.
var decimal = regexp.MustCompile(`^[+-]?[0-9]+$`)
