package strictyaml

import (
	"fmt"
	"reflect"
	"strings"

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

// List is a field type that decodes itself from one YAML list (a set of
// layer indexes held as a comparable value, say), and names in a message
// what it wants.
type List interface {
	DecodeList(n *yaml.Node) error
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
	if l, ok := v.Addr().Interface().(List); ok {
		if isNull(n) {
			return nil
		}
		if n.Kind != yaml.SequenceNode {
			return errors.Errorf("%s: %s: %s, got %s", where(n), path, l.Want(), describe(n))
		}
		if err := l.DecodeList(n); err != nil {
			return errors.Errorf("%s: %s: %s", where(n), path, l.Want())
		}
		return nil
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
