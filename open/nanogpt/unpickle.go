package nanogpt

import (
	"bytes"
	"fmt"
	"math/big"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
)

// unpickler says what a restricted unpickling may meet: the globals it
// allows ("module.name", checked on the opcodes before anything runs), the
// value each stands for (gopickle builds collections.OrderedDict itself), and
// how persistent ids resolve (nil: a persistent id is refused).
type unpickler struct {
	allowed    []string
	classes    map[string]any
	persistent func(pid any) (any, error)
}

// load unpickles data. Only the allowed globals are ever looked up, each to
// a value of this package: nothing in the pickle can run code or name a
// type to build. Every size the pickle states is checked before gopickle
// reads it (checkBounds). A malformed stream is an error, never a panic.
func (up unpickler) load(data []byte) (value any, err error) {
	if err := checkGlobals(data, up.allowed); err != nil {
		return nil, err
	}
	if err := checkBounds(data); err != nil {
		return nil, err
	}
	// The hooks' own errors say exactly what is wrong; gopickle's are
	// reported as a malformed pickle.
	var hookErr error
	hook := func(err error) error {
		if hookErr == nil {
			hookErr = err
		}
		return err
	}
	u := pickle.NewUnpickler(bytes.NewReader(data))
	u.FindClass = func(module, name string) (any, error) {
		if c, ok := up.classes[module+"."+name]; ok {
			return c, nil
		}
		return nil, hook(errors.Errorf("global %s.%s is not allowed", msg.Clean(module), msg.Clean(name)))
	}
	u.PersistentLoad = func(pid any) (any, error) {
		if up.persistent == nil {
			return nil, hook(errors.New("the pickle has a persistent id, which this file cannot have"))
		}
		v, err := up.persistent(pid)
		if err != nil {
			return nil, hook(err)
		}
		return v, nil
	}
	defer func() {
		if r := recover(); r != nil {
			value, err = nil, errors.Errorf("malformed pickle (%s)", msg.Clean(fmt.Sprint(r)))
		}
	}()
	value, err = u.Load()
	switch {
	case hookErr != nil:
		return nil, hookErr
	case err != nil:
		return nil, errors.Errorf("malformed pickle: %s", msg.Clean(err.Error()))
	}
	return value, nil
}

// call makes f a global the pickle may call (REDUCE) with its arguments.
type call func(args ...any) (any, error)

func (f call) Call(args ...any) (any, error) { return f(args...) }

// items are the key-value pairs of a pickled dict or OrderedDict, in
// order; what names the dict in errors.
func items(v any, what string) ([]entry, error) {
	var out []entry
	switch d := v.(type) {
	case *types.Dict:
		for _, e := range *d {
			out = append(out, entry{e.Key, e.Value})
		}
	case *types.OrderedDict:
		for el := d.List.Front(); el != nil; el = el.Next() {
			e := el.Value.(*types.OrderedDictEntry)
			out = append(out, entry{e.Key, e.Value})
		}
	default:
		return nil, errors.Errorf("%s is %s, want a dict", what, typeName(v))
	}
	return out, nil
}

// entries are the items of a dict whose keys are strings. A key twice is
// refused: a pickled dict cannot hold one, and the last would silently win.
func entries(v any, what string) ([]entry, error) {
	out, err := items(v, what)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(out))
	for _, e := range out {
		k, ok := e.key.(string)
		if !ok {
			return nil, errors.Errorf("%s has a key that is %s, want strings", what, typeName(e.key))
		}
		if seen[k] {
			return nil, errors.Errorf("%s has the key %s twice", what, msg.Quote(k))
		}
		seen[k] = true
	}
	return out, nil
}

// entry is one item of a dict.
type entry struct{ key, value any }

// name is the key of an entry of entries.
func (e entry) name() string { return e.key.(string) }

// lookup is the value of key in es, and whether it is there.
func lookup(es []entry, key string) (any, bool) {
	for _, e := range es {
		if k, ok := e.key.(string); ok && k == key {
			return e.value, true
		}
	}
	return nil, false
}

// intValue is v as an int; what names it in errors.
func intValue(v any, what string) (int, error) {
	switch n := v.(type) {
	case int:
		return n, nil
	case *big.Int:
		return 0, errors.Errorf("%s = %s is too large", what, msg.Clean(n.String()))
	}
	return 0, errors.Errorf("%s is %s, want an integer", what, typeName(v))
}

// intTuple is v, a tuple of non-negative ints, as a slice.
func intTuple(v any, what string) ([]int, error) {
	t, ok := v.(*types.Tuple)
	if !ok {
		return nil, errors.Errorf("%s is %s, want a tuple of integers", what, typeName(v))
	}
	out := make([]int, t.Len())
	for i := range out {
		n, err := intValue(t.Get(i), fmt.Sprintf("%s[%d]", what, i))
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, errors.Errorf("%s[%d] = %d is negative", what, i, n)
		}
		out[i] = n
	}
	return out, nil
}

// typeName names the Python type an unpickled value had.
func typeName(v any) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case bool:
		return "a bool"
	case int, *big.Int:
		return "an int"
	case float64:
		return "a float"
	case string:
		return "a str"
	case []byte:
		return "bytes"
	case *types.Dict, *types.OrderedDict:
		return "a dict"
	case *types.List:
		return "a list"
	case *types.Tuple:
		return "a tuple"
	case *tensorRef:
		return "a tensor"
	case *storage:
		return "a storage"
	default:
		return fmt.Sprintf("a %T", v)
	}
}
