package cli

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
)

// Rename keeps old working as another name of fs's flag now, so that the
// commands a README or a script wrote before the rename still run: each
// use sets now and writes one note naming the new name to notices. The old
// name is left out of -h. now must be defined first.
func Rename(fs *flag.FlagSet, old, now string, notices io.Writer) {
	target := fs.Lookup(now)
	if target == nil {
		panic("cli.Rename: -" + now + " is not defined") // a programming error, met by every test of the command
	}
	fs.Var(&renamed{fs: fs, old: old, now: target, notices: notices}, old, "old name of -"+now)
}

// renamed is the value of a flag's old name.
type renamed struct {
	fs       *flag.FlagSet
	old      string
	now      *flag.Flag
	notices  io.Writer
	reported bool
}

func (r *renamed) String() string {
	if r == nil || r.now == nil {
		return ""
	}
	return r.now.Value.String()
}

// Set sets the new flag, through fs so that fs.Visit sees it given.
func (r *renamed) Set(v string) error {
	if !r.reported {
		fmt.Fprintf(r.notices, "note: -%s is now called -%s (the old name still works)\n", r.old, r.now.Name)
		r.reported = true
	}
	return r.fs.Set(r.now.Name, v)
}

// IsBoolFlag lets the old name of a boolean flag stand alone, as the new
// one does.
func (r *renamed) IsBoolFlag() bool {
	b, ok := r.now.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// FlagOrArg is the one value a flag and the command's operand give for the
// same thing (a model, a run directory), or a refusal when both are given
// and name different paths.
func FlagOrArg(flagName, flagValue, arg string) (string, error) {
	switch {
	case arg == "":
		return flagValue, nil
	case flagValue == "" || filepath.Clean(flagValue) == filepath.Clean(arg):
		return arg, nil
	}
	return "", errors.Errorf("-%s %s and the argument %s name different paths; give one", flagName, msg.Quote(flagValue), msg.Quote(arg))
}

// Given is the set of the flags of fs the command line set.
func Given(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}
