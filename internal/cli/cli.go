package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
)

// Main is a command's main: it calls run with the process's arguments and
// streams, and when run fails prints its error on one line of stderr after
// the command's name ("train: ...") and exits 1, or, for an *Interrupted,
// exits as a shell reports the signal (130 for SIGINT). Unless GOGC is set,
// the heap is collected when it has grown by a quarter (Go's default waits
// for it to double; see heapGrowth).
func Main(name string, run func(args []string, stdout, stderr io.Writer) error) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(heapGrowth)
	}
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		code := 1
		var stopped *Interrupted
		if errors.As(err, &stopped) {
			code = stopped.ExitCode()
		}
		if text := err.Error(); text != "" {
			fmt.Fprintf(os.Stderr, "%s: %s\n", name, text)
		}
		os.Exit(code)
	}
}

// heapGrowth is the GC percent of the commands. Their heap is mostly
// tensors, which hold no pointers and cost the collector nothing to mark,
// while a graph's buffers come and go in hundreds of megabytes at a model
// of GPT-2 small's size: inspect -ablate on it peaked at 3.7 GB at Go's
// 100 and 2.3 GB at 25, in the same time.
const heapGrowth = 25

// Parse parses args into fs, for a command that takes flags only. On -h (or
// -help) it writes usage and the flag defaults to help (stdout) and returns
// helped = true: the command has nothing more to do. A bad flag or value
// and any positional argument are errors, with a suggestion where one is
// likely: the nearest flag ("did you mean -config?"), or for a command with
// a -set flag and config keys, the -set of a key named like the flag
// ("-steps 10": "did you mean -set train.steps=10?") or the key=value the
// user split in two ("-set model.heads 8": "did you mean -set
// model.heads=8?").
func Parse(fs *flag.FlagSet, args []string, usage string, help io.Writer, keys ...string) (helped bool, err error) {
	_, helped, err = ParseArgs(fs, args, usage, help, Operand{}, keys...)
	return helped, err
}

// Operand is the positional argument a command takes besides its flags:
// at most one, called Name in a refusal ("model"). The zero Operand takes
// none.
type Operand struct{ Name string }

// ParseArgs is Parse for a command that takes an operand: flags may come
// before or after it ("--" ends the flags), and it is returned (or "").
// Any further argument is refused by name.
func ParseArgs(fs *flag.FlagSet, args []string, usage string, help io.Writer, operand Operand, keys ...string) (arg string, helped bool, err error) {
	fs.SetOutput(io.Discard) // the flag package's own messages are multi-line
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(help, usage)
			printDefaults(fs, help)
			return "", true, nil
		}
		return "", false, errors.Errorf("bad flags (see -h): %s%s", msg.Shorten(err.Error()), suggestFlag(fs, err, args, keys))
	}
	switch {
	case len(positional) == 0:
		return "", false, nil
	case operand.Name == "":
		return "", false, Unexpected(fs, args, positional, "flags only")
	case len(positional) > 1:
		return "", false, Unexpected(fs, args, positional[1:], fmt.Sprintf("one %s, already given as %s", operand.Name, msg.Quote(positional[0])))
	}
	return positional[0], false, nil
}

// parseInterspersed parses the flags of args wherever they stand and
// returns the other arguments in order. Go's flag package stops at the
// first one, so that "inspect runs/copy -summary" would take -summary for
// an argument.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return nil, err
		}
		if used := len(rest) - fs.NArg(); used > 0 && rest[used-1] == "--" || fs.NArg() == 0 {
			return append(positional, fs.Args()...), nil
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
}

// Unexpected is the refusal of the stray arguments among args, each named,
// saying what the command takes ("flags only"), with the -set the user
// probably meant when the first is the value of a "-set key value".
func Unexpected(fs *flag.FlagSet, args, strays []string, takes string) error {
	quoted := make([]string, len(strays))
	for i, s := range strays {
		quoted[i] = msg.Quote(s)
	}
	noun := "argument"
	if len(strays) > 1 {
		noun = "arguments"
	}
	return errors.Errorf("unexpected %s %s (%s; see -h)%s", noun, strings.Join(quoted, ", "), takes, suggestSplit(fs, args, strays[0]))
}

// printDefaults is fs.PrintDefaults without the old names of renamed flags,
// which still work but are no longer taught.
func printDefaults(fs *flag.FlagSet, w io.Writer) {
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if _, old := f.Value.(*renamed); !old {
			shown.Var(f.Value, f.Name, f.Usage)
			shown.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	shown.SetOutput(w)
	shown.PrintDefaults()
}

// suggestFlag names the flag (or the -set) an undefined flag was probably
// meant to be, or returns "".
func suggestFlag(fs *flag.FlagSet, err error, args, keys []string) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	name = strings.TrimPrefix(name, "-")
	var flags []string
	fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f.Name) })
	if near := msg.Nearest(name, flags); near != "" {
		return fmt.Sprintf(" (did you mean -%s?)", near)
	}
	for _, key := range keys {
		if key == name || strings.HasSuffix(key, "."+name) {
			value := "VALUE"
			for i, a := range args {
				if strings.TrimLeft(a, "-") == name && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
					value = args[i+1]
				}
			}
			return fmt.Sprintf(" (did you mean -set %s=%s?)", key, msg.Clean(value))
		}
	}
	return ""
}

// suggestSplit recognises "-set key value", which leaves value as a stray
// argument, and suggests "-set key=value".
func suggestSplit(fs *flag.FlagSet, args []string, stray string) string {
	at := -1 // the stray argument's place in args, from the end: a value given twice is the later one
	for i := len(args) - 1; i >= 0 && at < 0; i-- {
		if args[i] == stray {
			at = i
		}
	}
	if at < 2 || fs.Lookup("set") == nil || strings.TrimLeft(args[at-2], "-") != "set" || strings.Contains(args[at-1], "=") {
		return ""
	}
	return fmt.Sprintf(" (did you mean -set %s=%s?)", msg.Clean(args[at-1]), msg.Clean(args[at]))
}
