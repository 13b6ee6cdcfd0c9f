package strictyaml

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pkg/errors"
	"go.yaml.in/yaml/v3"

	"github.com/attnscope/attnscope/internal/msg"
)

// Scalar is a field type that decodes itself from one YAML scalar (a
// switch whose unset value means on, say), and names in a message what it
// wants ("want true or false").
type Scalar interface {
	DecodeScalar(n *yaml.Node) error
	Want() string
}

// Decoder decodes YAML into a struct strictly (see the package doc).
type Decoder struct {
	// Fixed names dotted keys a person might try to set but may not, each
	// with the reason the error gives: keys the struct does not decode
	// (tagged yaml:"-"), or keys it does that only another writer may set.
	// A fixed key is refused even where the struct has it, and is left out
	// of the lists of allowed keys.
	Fixed map[string]string
}

// File decodes the YAML document src into the struct dst points to, over
// what dst already holds; name is used in messages, which are one line:
// "name:line:column: ...". An empty document is an error.
func (d Decoder) File(dst any, name string, src []byte) error {
	root, syntaxErr := parseYAML(src)
	if syntaxErr != nil {
		return errors.Errorf("%s: %s", syntaxErr.where(name), syntaxErr)
	}
	if root == nil {
		return errors.Errorf("%s: empty config", name)
	}
	return d.assign(reflect.ValueOf(dst).Elem(), root, "", func(n *yaml.Node) string {
		return fmt.Sprintf("%s:%d:%d", name, n.Line, n.Column)
	})
}

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

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// Set applies one "-set key=value" override to the struct dst points to:
// value is parsed as YAML and assigned to the field at the dotted key exactly
// as if the file held it.
func (d Decoder) Set(dst any, set string) error {
	key, value, ok := strings.Cut(set, "=")
	if !ok || key == "" {
		return errors.Errorf("-set %s: want key=value", clean(set))
	}
	where := func(*yaml.Node) string { return "-set " + clean(set) }
	field, path := reflect.ValueOf(dst).Elem(), ""
	for _, name := range strings.Split(key, ".") {
		next, err := d.lookup(field, path, name)
		if err != nil {
			return errors.Errorf("%s: %s", where(nil), err)
		}
		field, path = next, join(path, name)
	}
	node, syntaxErr := parseYAML([]byte(value))
	if syntaxErr != nil {
		return errors.Errorf("%s: %s", where(nil), syntaxErr)
	}
	if node == nil {
		node = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	return d.assign(field, node, path, where)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// keys lists the YAML keys of a struct type, in field order.
func keys(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if name := yamlKey(t.Field(i)); name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// settable lists the keys of struct type t, at path, that are not Fixed.
func (d Decoder) settable(t reflect.Type, path string) []string {
	var out []string
	for _, key := range keys(t) {
		if _, fixed := d.Fixed[join(path, key)]; !fixed {
			out = append(out, key)
		}
	}
	return out
}

// yamlKey is a field's YAML key: its tag up to any option (",omitempty").
func yamlKey(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}

// lookup returns the field of struct v whose YAML key is name; path is v's
// own key path, for the message.
func (d Decoder) lookup(v reflect.Value, path, name string) (reflect.Value, error) {
	full := join(path, clean(name))
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, errors.Errorf("unknown key %s (%s is not a section)", full, path)
	}
	if why, ok := d.Fixed[full]; ok {
		return reflect.Value{}, errors.Errorf("%s cannot be set: %s", full, why)
	}
	for i := range v.NumField() {
		if yamlKey(v.Type().Field(i)) == name && name != "-" {
			return v.Field(i), nil
		}
	}
	allowed := d.settable(v.Type(), path)
	hint := ""
	if near := msg.Nearest(name, allowed); near != "" {
		hint = fmt.Sprintf("; did you mean %s?", join(path, near))
	}
	return reflect.Value{}, errors.Errorf("unknown key %s (allowed: %s)%s", full, strings.Join(allowed, ", "), hint)
}

// Paths lists the dotted keys of every leaf of the struct *dst (or dst),
// in field order: "seed", "task.name", ..., for suggestions.
func Paths(dst any) []string {
	var out []string
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for i := range t.NumField() {
			f := t.Field(i)
			name := yamlKey(f)
			if name == "-" || name == "" {
				continue
			}
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, join(path, name))
				continue
			}
			out = append(out, join(path, name))
		}
	}
	t := reflect.TypeOf(dst)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	walk(t, "")
	return out
}

// describe names the kind of a non-scalar node for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	if isNull(n) {
		return "no value"
	}
	return "a value"
}

// show prints a scalar the way the user wrote it, quoting strings, and
// shortened past msg.MaxShown bytes.
func show(n *yaml.Node) string {
	if n.ShortTag() == "!!str" {
		return msg.Quote(n.Value)
	}
	return clean(n.Value)
}

// clean returns s, or s quoted when it holds a character (a newline, say)
// that would garble a one-line message, shortened past msg.MaxShown bytes.
func clean(s string) string { return msg.Clean(s) }

// assign decodes n into v, the value at key path. Sections must be mappings
// of known keys, each at most once (a null section keeps its defaults);
// leaves must be scalars of the field's type. where gives a node's position
// for messages.
func (d Decoder) assign(v reflect.Value, n *yaml.Node, path string, where func(*yaml.Node) string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if v.Kind() == reflect.Struct {
		return d.assignSection(v, n, path, where)
	}
	if v.Kind() == reflect.Slice {
		return d.assignList(v, n, path, where)
	}
	if sc, ok := v.Addr().Interface().(Scalar); ok {
		if n.Kind != yaml.ScalarNode || isNull(n) {
			return errors.Errorf("%s: %s: %s, got %s", where(n), path, sc.Want(), describe(n))
		}
		if err := sc.DecodeScalar(n); err != nil {
			return errors.Errorf("%s: %s = %s: %s", where(n), path, show(n), sc.Want())
		}
		return nil
	}
	if n.Kind != yaml.ScalarNode || isNull(n) {
		return errors.Errorf("%s: %s: %s, got %s", where(n), path, want(v.Kind()), describe(n))
	}
	var err error
	switch v.Kind() {
	case reflect.String:
		v.SetString(n.Value)
	case reflect.Bool:
		if n.ShortTag() != "!!bool" {
			err = errors.New("not a boolean")
		} else {
			err = n.Decode(v.Addr().Interface())
		}
	default:
		err = n.Decode(v.Addr().Interface())
		if err == nil && (v.CanInt() || v.CanUint()) {
			err = integral(n, v)
		}
	}
	if err != nil {
		return errors.Errorf("%s: %s = %s: %s", where(n), path, show(n), want(v.Kind()))
	}
	return nil
}

// assignList decodes a sequence node (a null one keeps the default) into
// the slice v, each element as a leaf of the element type.
func (d Decoder) assignList(v reflect.Value, n *yaml.Node, path string, where func(*yaml.Node) string) error {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return errors.Errorf("%s: %s: want a list such as [12, 16] (%s each), got %s", where(n), path, strings.TrimPrefix(want(v.Type().Elem().Kind()), "want "), describe(n))
	}
	list := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		if err := d.assign(list.Index(i), item, fmt.Sprintf("%s[%d]", path, i), where); err != nil {
			return err
		}
	}
	v.Set(list)
	return nil
}

func (d Decoder) assignSection(v reflect.Value, n *yaml.Node, path string, where func(*yaml.Node) string) error {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		section := "the config"
		if path != "" {
			section = path
		}
		return errors.Errorf("%s: %s: want a mapping with keys %s, got %s", where(n), section, strings.Join(d.settable(v.Type(), section), ", "), describe(n))
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, value := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return errors.Errorf("%s: %s: a key must be a plain name, got %s", where(k), join(path, "?"), describe(k))
		}
		if first, dup := seen[k.Value]; dup {
			return errors.Errorf("%s: duplicate key %s (first set at line %d)", where(k), join(path, clean(k.Value)), first.Line)
		}
		seen[k.Value] = k
		field, err := d.lookup(v, path, k.Value)
		if err != nil {
			return errors.Errorf("%s: %s", where(k), err)
		}
		if err := d.assign(field, value, join(path, k.Value), where); err != nil {
			return err
		}
	}
	return nil
}

// integral rejects a fraction that yaml.v3 truncated into an integer field
// (it decodes 2.5 into an int as 2).
func integral(n *yaml.Node, v reflect.Value) error {
	if n.ShortTag() != "!!float" {
		return nil
	}
	var f float64
	if err := n.Decode(&f); err != nil {
		return err
	}
	if (v.CanInt() && float64(v.Int()) != f) || (v.CanUint() && float64(v.Uint()) != f) {
		return errors.New("not an integer")
	}
	return nil
}

// want says what a field of kind k accepts.
func want(k reflect.Kind) string {
	switch k {
	case reflect.Int:
		return "want an integer"
	case reflect.Uint64:
		return "want an integer >= 0"
	case reflect.Float64:
		return "want a number"
	case reflect.Bool:
		return "want true or false"
	}
	return "want a string"
}
