package main

import (
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"strconv"

	"github.com/pkg/errors"
	"golang.org/x/term"

	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/progress"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/render/htmlview"
	"github.com/attnscope/attnscope/report"
	"github.com/attnscope/attnscope/rundir"
)

// writeOutputs writes the files asked for, then prints -json or the text
// view. With a file written, the terminal gets the heads' table and where
// the file went, not every heatmap again. Writing each file is a phase on
// line (nil: none), which is cleared before stdout is written.
func writeOutputs(r *report.Report, o options, mode render.Mode, stdout io.Writer, line *progress.Line) error {
	if o.png != "" {
		writing(line, o.png)
		if err := writePNG(r, o.png); err != nil {
			return err
		}
	}
	if o.html != "" {
		writing(line, o.html)
		if err := writeHTML(r, o.html); err != nil {
			return err
		}
	}
	if o.save != "" {
		writing(line, o.save)
		if err := safefile.WriteOutput(o.save, r.Inputs(), rundir.RefuseRunFile, r.WriteActivations); err != nil {
			return errors.Wrap(err, "-save-activations")
		}
	}
	if line != nil {
		line.Finish()
	}
	if o.json {
		return writeJSONLine(stdout, r.JSON())
	}
	summary := o.summary || o.png != "" || o.html != "" || o.save != ""
	if err := render.WriteInspect(stdout, r.Text(summary), mode, width(stdout)); err != nil {
		return err
	}
	return wrote(stdout, o.png, o.html, o.save)
}

// writing starts line's phase of writing the file at path.
func writing(line *progress.Line, path string) {
	if line != nil {
		line.Update("writing "+msg.Clean(path), 0, 0, "")
	}
}

// writePNG draws the selected heads (and the circuits and patching) as one image,
// written by the output rule (safefile.WriteOutput): never over a file the
// model was or may be read from, a run file or anything but a regular file.
func writePNG(r *report.Report, path string) error {
	img, err := r.Image()
	if err != nil {
		return err
	}
	return errors.Wrap(safefile.WriteOutput(path, r.Inputs(), rundir.RefuseRunFile, encodePNG(img)), "-png")
}

// encodePNG writes img as a PNG.
func encodePNG(img image.Image) func(io.Writer) error {
	return func(w io.Writer) error { return png.Encode(w, img) }
}

// writeHTML writes the interactive page atomically.
func writeHTML(r *report.Report, path string) error {
	d, err := r.Page()
	if err != nil {
		return err
	}
	err = safefile.WriteOutput(path, r.Inputs(), rundir.RefuseRunFile, func(w io.Writer) error { return htmlview.Write(w, d) })
	return errors.Wrap(err, "-html")
}

// checkOutput refuses an output path (given with flag) that could not be
// written; "" is no output.
func checkOutput(flag, path string, inputs []string) error {
	if path == "" {
		return nil
	}
	return errors.Wrap(safefile.CheckOutput(path, inputs, rundir.RefuseRunFile), flag)
}

// wrote says which files were written ("" is none).
func wrote(stdout io.Writer, paths ...string) error {
	for _, path := range paths {
		if path != "" {
			if _, err := fmt.Fprintf(stdout, "wrote %s\n", path); err != nil {
				return errors.Wrap(err, "writing output")
			}
		}
	}
	return nil
}

// writeJSONLine prints v as one line of JSON through escape.JSON: the
// labels and paths it holds keep their real characters, but a control,
// C1 or format character travels as a \u escape, never raw.
func writeJSONLine(w io.Writer, v any) error {
	doc, err := json.Marshal(v)
	if err != nil {
		return errors.Wrap(err, "encoding JSON")
	}
	_, err = w.Write(append(escape.JSON(doc), '\n'))
	return errors.Wrap(err, "writing JSON")
}

// colorMode resolves -color: never is plain; always is colour; auto is
// colour only when stdout is a terminal and NO_COLOR is unset or empty.
// Colour is 24-bit when COLORTERM says truecolor or 24bit, else 256-colour.
func colorMode(flagValue string, stdout io.Writer) (render.Mode, error) {
	switch flagValue {
	case "never":
		return render.Plain, nil
	case "auto":
		if os.Getenv("NO_COLOR") != "" || !progress.IsTerminal(stdout) {
			return render.Plain, nil
		}
	case "always":
	default:
		return render.Plain, errors.Errorf("-color %s: want auto, always or never", msg.Quote(flagValue))
	}
	if ct := os.Getenv("COLORTERM"); ct == "truecolor" || ct == "24bit" {
		return render.TrueColor, nil
	}
	return render.Color256, nil
}

// defaultWidth is the layout width when neither the terminal nor COLUMNS
// says otherwise (stdout redirected to a file or a pipe).
const defaultWidth = 80

// width is the width the text views are laid out to (layoutWidth of this
// process's terminal and environment).
func width(stdout io.Writer) int { return layoutWidth(stdout, stdoutWidth, os.Getenv) }

// layoutWidth is the terminal's width, when stdout is one (terminalWidth
// > 0), else COLUMNS if getenv gives a positive integer, else
// defaultWidth. The terminal comes first: a shell's COLUMNS goes stale
// when the window is resized, and most shells do not export it.
func layoutWidth(stdout io.Writer, terminalWidth func(io.Writer) int, getenv func(string) string) int {
	if w := terminalWidth(stdout); w > 0 {
		return w
	}
	if n, err := strconv.Atoi(getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return defaultWidth
}

// stdoutWidth is the width of the terminal stdout is, 0 when it is none.
func stdoutWidth(stdout io.Writer) int {
	if !progress.IsTerminal(stdout) {
		return 0
	}
	w, _, err := term.GetSize(int(stdout.(*os.File).Fd()))
	if err != nil {
		return 0
	}
	return w
}
