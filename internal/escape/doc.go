// Package escape is the one place that decides what of a string may reach a
// terminal, a log, a JSON document or a page as it is. Model text, token
// labels and anything else that came from a file pass through it before they
// are written anywhere a person or a terminal reads them.
//
// Conventions:
//   - A character is unsafe when a terminal or a text renderer would act on it
//     instead of showing it: C0 controls (U+0000-U+001F), DEL (U+007F), C1
//     controls (U+0080-U+009F, among them the 8-bit CSI, OSC, DCS and ST),
//     Unicode format characters (category Cf: bidi embeddings, overrides and
//     isolates, zero-width marks, the byte-order mark, tag characters) and
//     the line and paragraph separators U+2028 and U+2029. A byte that is not
//     part of valid UTF-8 is unsafe too.
//   - An unsafe character is written as a visible escape in Go's syntax: \x1b
//     for C0 and DEL, \u009b for C1, \u202e for the others (\U000e0001 above
//     U+FFFF), and \xff for an invalid byte. Text keeps newline and tab (model
//     text is laid out by them); Label escapes them as \n and \t, since a
//     label is one cell of a table. Neither escapes a backslash: the output is
//     for reading, and Go's %q is the form to use where it must be parsed.
//   - JSON keeps the real characters: it rewrites every unsafe character that
//     encoding/json leaves raw (DEL, C1, Cf) as a \u escape, so a JSON
//     document holds only printable text and still decodes to the same values.
package escape
