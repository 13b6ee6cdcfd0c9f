package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
)

// Pick is the layers or the heads a user picks with -layer or -head: every
// one (All), the numbers Only lists (ascending, each once: "0,5-7"), or,
// the zero Pick, the default (every head; for layers, as many as read well:
// Options.Layers).
type Pick struct {
	All  bool
	Only []int
}

// Every picks every layer or head.
var Every = Pick{All: true}

// Only picks the numbers ns (in any order, repeats allowed).
func Only(ns ...int) Pick {
	p := Pick{Only: slices.Clone(ns)}
	slices.Sort(p.Only)
	p.Only = slices.Compact(p.Only)
	return p
}

// isDefault reports whether p is the zero Pick: nothing was asked.
func (p Pick) isDefault() bool { return !p.All && p.Only == nil }

// MaxPicked bounds a number -layer or -head names, so that a range like
// 0-999999999 is refused before it is spelled out (the widest model the
// lab opens has far fewer layers or heads).
const MaxPicked = 4096

// ParsePick reads a -layer or -head value: "all" (or -1, its old
// spelling), a number, or a list of numbers and ranges, "0,5-7". Each error
// is one line saying what is wrong and what is allowed, for the caller to
// put after the flag and the value (as package flag does).
func ParsePick(v string) (Pick, error) {
	if v == "all" || v == "-1" {
		return Every, nil
	}
	var ns []int
	for _, part := range strings.Split(v, ",") {
		lo, hi, err := parseRange(part)
		if err != nil {
			return Pick{}, errors.Errorf("%s; want all, a number or a list of numbers and ranges, e.g. 0,5-7", err)
		}
		for n := lo; n <= hi; n++ {
			ns = append(ns, n)
		}
	}
	return Only(ns...), nil
}

// parseRange reads one item of a list: "5" or "5-7".
func parseRange(s string) (lo, hi int, err error) {
	if strings.HasPrefix(s, "-") {
		return 0, 0, errors.Errorf("%s is negative; layers and heads count from 0", s)
	}
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = parseIndex(a); err != nil {
		return 0, 0, err
	}
	if !isRange {
		return lo, lo, nil
	}
	if hi, err = parseIndex(b); err != nil {
		return 0, 0, err
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("the range %s-%s runs backwards", a, b)
	}
	return lo, hi, nil
}

// parseIndex reads one layer or head number: digits only.
func parseIndex(s string) (int, error) {
	if s == "" {
		return 0, errors.New("an empty item (a number before or after a comma or a dash is missing)")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, errors.Errorf("%s is not a number", msg.Quote(s))
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n >= MaxPicked {
		return 0, errors.Errorf("%s is past %d", s, MaxPicked-1)
	}
	return n, nil
}

// String is the pick as a flag would give it: "all", "0,5-7", "" for the
// default.
func (p Pick) String() string {
	if p.All {
		return "all"
	}
	var items []string
	for i := 0; i < len(p.Only); {
		j := i
		for j+1 < len(p.Only) && p.Only[j+1] == p.Only[j]+1 {
			j++
		}
		item := strconv.Itoa(p.Only[i])
		if j > i {
			item += "-" + strconv.Itoa(p.Only[j])
		}
		items, i = append(items, item), j+1
	}
	return strings.Join(items, ",")
}

// of is the numbers p picks of n (every one for All or the default).
func (p Pick) of(n int) []int {
	if p.Only != nil {
		return p.Only
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	return all
}

// check refuses a pick naming a layer or head the model does not have,
// naming the valid ones: "the model has 2 layers (0..1)", "1 head per
// layer (only head 0)".
func (p Pick) check(flagName string, n int, noun, per string) error {
	if len(p.Only) == 0 || p.Only[len(p.Only)-1] < n {
		return nil
	}
	valid := fmt.Sprintf("0..%d", n-1)
	if n == 1 {
		valid = "only " + noun + " 0"
	}
	last := p.Only[len(p.Only)-1]
	given := fmt.Sprintf("%s %d", flagName, last)
	if len(p.Only) > 1 {
		given = fmt.Sprintf("%s %s: %s %d", flagName, p, noun, last)
	}
	return errors.Errorf("%s does not exist: the model has %s%s (%s)", given, msg.Count(n, noun), per, valid)
}

// Flag is the flag.Func parser of a -layer or -head value into p
// (ParsePick).
func (p *Pick) Flag() func(string) error {
	return func(v string) (err error) {
		*p, err = ParsePick(v)
		return err
	}
}
