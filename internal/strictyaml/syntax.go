package strictyaml

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// The syntax errors of yaml.v3, rewritten onto one line with the line and
// column where the document goes wrong.

// yamlLine matches the position yaml.v3 puts in its syntax errors.
var yamlLine = regexp.MustCompile(`^yaml: (?:line (\d+): )?`)

// syntaxError is a YAML syntax error rewritten onto one line.
type syntaxError struct {
	line   int // 1-based
	column int // 1-based, in characters; 0 when locate could not afford to find it
	msg    string
}

func (e *syntaxError) Error() string { return "YAML syntax: " + e.msg }

// where prefixes the file name with the error's position.
func (e *syntaxError) where(name string) string {
	if e.column == 0 {
		return fmt.Sprintf("%s:%d", name, e.line)
	}
	return fmt.Sprintf("%s:%d:%d", name, e.line, e.column)
}

// parseYAML parses exactly one YAML document; it returns nil for an empty
// one. A syntax error carries the line and column of its culprit (locate).
func parseYAML(src []byte) (*yaml.Node, *syntaxError) {
	root, err := decodeYAML(src, "")
	if err != nil && strings.Contains(err.msg, "UTF-8") {
		// yaml.v3 reports a bad byte at the line its scanner was on, which
		// can be lines before it (a bad byte in a comment): the byte itself
		// says where it is.
		err.line, err.column = position(src, firstInvalidUTF8(src))
		return root, err
	}
	if err != nil && err.column == 0 {
		locate(src, err)
	}
	return root, err
}

// firstInvalidUTF8 returns the offset of the first byte of src that does not
// start a valid UTF-8 sequence, or len(src).
func firstInvalidUTF8(src []byte) int {
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(src)
}

// decodeYAML is parseYAML without the column of a syntax error: it parses
// src followed by suffix, reading one byte at a time so that the parser
// decodes no character it does not ask for (see locate).
func decodeYAML(src []byte, suffix string) (*yaml.Node, *syntaxError) {
	dec := yaml.NewDecoder(&byteReader{src: src, suffix: suffix})
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, nil
		}
		return nil, rewrite(err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, &syntaxError{line: extra.Line, column: extra.Column, msg: "a second YAML document starts here; a config is one document"}
	case err != io.EOF:
		return nil, rewrite(err)
	}
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil, nil
	}
	return doc.Content[0], nil
}

// byteReader yields src and then suffix, one byte per Read. yaml.v3 decodes
// every byte a Read returns (checking each for control characters) but scans
// only the characters it asks for, so fed one byte at a time it reads no
// further than it looks.
type byteReader struct {
	src    []byte
	suffix string
}

func (r *byteReader) Read(p []byte) (int, error) {
	switch {
	case len(p) == 0:
		return 0, nil
	case len(r.src) > 0:
		p[0], r.src = r.src[0], r.src[1:]
	case len(r.suffix) > 0:
		p[0], r.suffix = r.suffix[0], r.suffix[1:]
	default:
		return 0, io.EOF
	}
	return 1, nil
}

// locateBudget bounds the bytes locate may parse (about 0.1 s): it finds
// the column of an error in a config of a few kilobytes with a few dozen
// parses, and gives up on a huge file rather than stall.
const locateBudget = 1 << 20

// locateLinear is how many prefixes locate tries one by one before it
// gallops.
const locateLinear = 64

// locate sets e's line and column to the culprit of the syntax error e that
// parsing src gave, when it can find it within locateBudget.
//
// yaml.v3 keeps the column of an error to itself, and its line is sometimes
// where the enclosing construct opened, sometimes where the problem is. So
// locate asks the parser two things:
//
//  1. How far did it read? Parsing src[:k] followed by a NUL byte (a
//     character YAML forbids) fails with e exactly when the parser gives up
//     before looking at position k, a monotone property, so a binary search
//     finds the smallest such k: the detection point d.
//  2. Where did the problem become certain? Going back from d, locate finds
//     the shortest prefix src[:c] such that every prefix from c to d,
//     cut there (end of input), fails with e too. The last character of
//     src[:c] is the culprit: a tab, a stray ']', the ':' of "a: b: c", a
//     key indented wrongly, the opening quote of a string never closed, or
//     the last value before a '}' or ',' that is missing.
//
// Step 2 skips blank and comment-only lines, and past locateLinear prefixes
// it assumes the run of failing prefixes is unbroken and gallops (true of an
// unclosed quote, the one long run). A few thousand bytes need a few dozen
// parses; when the search would parse more than locateBudget bytes, e keeps
// yaml.v3's line and no column.
func locate(src []byte, e *syntaxError) {
	budget := locateBudget
	probe := "\x00"
	if e.msg == "control characters are not allowed" {
		probe = "\xff"
	}
	exhausted := false
	fails := func(k int, suffix string) bool {
		if budget < k {
			exhausted = true
			return false
		}
		budget -= k + len(suffix)
		_, got := decodeYAML(src[:k], suffix)
		return got != nil && got.line == e.line && got.msg == e.msg
	}
	// No prefix fails before the probe when the parser reads to the end of
	// src; sort.Search then returns len(src).
	d := sort.Search(len(src), func(k int) bool { return fails(k, probe) })
	if exhausted || !fails(d, "") {
		return
	}
	c := d
	for steps := 0; ; steps++ {
		if steps == locateLinear {
			c = gallop(src, c, fails)
			break
		}
		k := prevBoundary(src, c)
		for k > 0 && blankOrComment(src, k-1) {
			k = prevBoundary(src, k)
		}
		if k < 0 || !fails(k, "") {
			break
		}
		c = k
	}
	if exhausted || c == 0 {
		return
	}
	e.line, e.column = position(src, prevBoundary(src, c))
}

// gallop returns the start of the run of prefix lengths, ending at hi, for
// which fails holds, assuming the run is unbroken: it steps back in doubling
// strides to a length where fails does not hold, then bisects.
func gallop(src []byte, hi int, fails func(k int, suffix string) bool) int {
	lo := 0
	for stride := locateLinear; hi-stride > 0; stride *= 2 {
		k := alignUp(src, hi-stride, hi)
		if !fails(k, "") {
			lo = k
			break
		}
		hi = k
	}
	for hi-lo > 1 {
		mid := alignUp(src, lo+(hi-lo)/2, hi)
		if mid == hi {
			break
		}
		if fails(mid, "") {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// prevBoundary returns the largest k < c at which a character of src starts,
// or -1 when c is 0: src[:k] is src[:c] without its last character.
func prevBoundary(src []byte, c int) int {
	k := c - 1
	for k > 0 && !utf8.RuneStart(src[k]) {
		k--
	}
	return k
}

// blankOrComment reports whether byte i of src lies on a line (its line feed
// included) that holds nothing but blanks and perhaps a comment: cutting the
// input there tells locate nothing that cutting before the line does not.
func blankOrComment(src []byte, i int) bool {
	start := bytes.LastIndexByte(src[:i], '\n') + 1
	end := len(src)
	if n := bytes.IndexByte(src[i:], '\n'); n >= 0 {
		end = i + n
	}
	line := bytes.TrimSpace(src[start:end])
	return len(line) == 0 || line[0] == '#'
}

// alignUp moves k forward to the next character boundary, stopping at hi.
func alignUp(src []byte, k, hi int) int {
	for k < hi && k < len(src) && !utf8.RuneStart(src[k]) {
		k++
	}
	return k
}

// position returns the 1-based line and column of byte i of src the way
// yaml.v3 counts them: a column in characters, a byte order mark not
// counted, and CR LF, CR, LF, NEL, LS and PS each ending a line.
func position(src []byte, i int) (line, column int) {
	line, column = 1, 1
	for j := 0; j < i; {
		r, size := utf8.DecodeRune(src[j:])
		if r == '\r' && j+1 < i && src[j+1] == '\n' {
			size = 2
		}
		switch {
		case j == 0 && r == '\uFEFF':
		case r == '\r', r == '\n', r == '\u0085', r == '\u2028', r == '\u2029':
			line, column = line+1, 1
		default:
			column++
		}
		j += size
	}
	return line, column
}

// parserProblems are the messages yaml.v3's parser (as opposed to its
// scanner) reports. yaml.v3 prints a parser error's line 0-based and a
// scanner error's 1-based, and leaves a 0 out, so the line needs mending.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'": true, "did not find expected ',' or '}'": true,
	"did not find expected '-' indicator": true, "did not find expected <document start>": true,
	"did not find expected <stream-start>": true, "did not find expected key": true,
	"did not find expected node content": true, "found duplicate %TAG directive": true,
	"found duplicate %YAML directive": true, "found incompatible YAML document": true,
	"found undefined tag handle": true,
}

// rewrite turns yaml.v3's "yaml: line 3: did not find expected key" into a
// syntaxError with a 1-based line.
func rewrite(err error) *syntaxError {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		if m[1] != "" {
			line, _ = strconv.Atoi(m[1])
		}
		msg = msg[len(m[0]):]
	}
	if line == 0 || parserProblems[msg] {
		line++
	}
	return &syntaxError{line: line, msg: msg}
}
