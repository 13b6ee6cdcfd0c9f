package nanogpt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
)

// argKind is how an opcode's argument follows it in the stream (Python's
// pickletools names each: uint1, string4, stringnl, ...).
type argKind int

const (
	argNone     argKind = iota
	argFixed            // a fixed number of bytes
	argLine             // text up to a newline
	argTwoLines         // two newline-ended lines: GLOBAL's and INST's module and name
	argLen1             // a 1-byte length, then that many bytes
	argLen4             // a 4-byte little-endian length, then that many bytes
	argLen8             // an 8-byte little-endian length, then that many bytes
)

type opcodeInfo struct {
	name string
	kind argKind
	size int // bytes of an argFixed argument
}

// opcodes are every opcode of pickle protocols 0 to 5.
var opcodes = map[byte]opcodeInfo{
	'(': {"MARK", argNone, 0}, '.': {"STOP", argNone, 0}, '0': {"POP", argNone, 0},
	'1': {"POP_MARK", argNone, 0}, '2': {"DUP", argNone, 0}, 'F': {"FLOAT", argLine, 0},
	'I': {"INT", argLine, 0}, 'J': {"BININT", argFixed, 4}, 'K': {"BININT1", argFixed, 1},
	'L': {"LONG", argLine, 0}, 'M': {"BININT2", argFixed, 2}, 'N': {"NONE", argNone, 0},
	'P': {"PERSID", argLine, 0}, 'Q': {"BINPERSID", argNone, 0}, 'R': {"REDUCE", argNone, 0},
	'S': {"STRING", argLine, 0}, 'T': {"BINSTRING", argLen4, 0}, 'U': {"SHORT_BINSTRING", argLen1, 0},
	'V': {"UNICODE", argLine, 0}, 'X': {"BINUNICODE", argLen4, 0}, 'a': {"APPEND", argNone, 0},
	'b': {"BUILD", argNone, 0}, 'c': {"GLOBAL", argTwoLines, 0}, 'd': {"DICT", argNone, 0},
	'}': {"EMPTY_DICT", argNone, 0}, 'e': {"APPENDS", argNone, 0}, 'g': {"GET", argLine, 0},
	'h': {"BINGET", argFixed, 1}, 'i': {"INST", argTwoLines, 0}, 'j': {"LONG_BINGET", argFixed, 4},
	'l': {"LIST", argNone, 0}, ']': {"EMPTY_LIST", argNone, 0}, 'o': {"OBJ", argNone, 0},
	'p': {"PUT", argLine, 0}, 'q': {"BINPUT", argFixed, 1}, 'r': {"LONG_BINPUT", argFixed, 4},
	's': {"SETITEM", argNone, 0}, 't': {"TUPLE", argNone, 0}, ')': {"EMPTY_TUPLE", argNone, 0},
	'u': {"SETITEMS", argNone, 0}, 'G': {"BINFLOAT", argFixed, 8},
	0x80: {"PROTO", argFixed, 1}, 0x81: {"NEWOBJ", argNone, 0}, 0x82: {"EXT1", argFixed, 1},
	0x83: {"EXT2", argFixed, 2}, 0x84: {"EXT4", argFixed, 4}, 0x85: {"TUPLE1", argNone, 0},
	0x86: {"TUPLE2", argNone, 0}, 0x87: {"TUPLE3", argNone, 0}, 0x88: {"NEWTRUE", argNone, 0},
	0x89: {"NEWFALSE", argNone, 0}, 0x8a: {"LONG1", argLen1, 0}, 0x8b: {"LONG4", argLen4, 0},
	'B': {"BINBYTES", argLen4, 0}, 'C': {"SHORT_BINBYTES", argLen1, 0},
	0x8c: {"SHORT_BINUNICODE", argLen1, 0}, 0x8d: {"BINUNICODE8", argLen8, 0},
	0x8e: {"BINBYTES8", argLen8, 0}, 0x8f: {"EMPTY_SET", argNone, 0}, 0x90: {"ADDITEMS", argNone, 0},
	0x91: {"FROZENSET", argNone, 0}, 0x92: {"NEWOBJ_EX", argNone, 0}, 0x93: {"STACK_GLOBAL", argNone, 0},
	0x94: {"MEMOIZE", argNone, 0}, 0x95: {"FRAME", argFixed, 8}, 0x96: {"BYTEARRAY8", argLen8, 0},
	0x97: {"NEXT_BUFFER", argNone, 0}, 0x98: {"READONLY_BUFFER", argNone, 0},
}

// pickleOp is one opcode of a stream and its argument: the bytes after a
// length prefix, or a line without its newline (argTwoLines: both lines,
// joined by a newline).
type pickleOp struct {
	code byte
	pos  int // offset of the opcode
	arg  []byte
	// lenAt is the offset of a length-prefixed argument's length, -1 for
	// other kinds: a test rewrites a string through it.
	lenAt int
}

func (op pickleOp) name() string { return opcodes[op.code].name }

// walkOps visits every opcode of a pickle stream up to its STOP, checking
// each argument against the bytes that remain, so that no length read from
// the stream reaches an allocation unchecked. Bytes after STOP, an unknown
// opcode, a stream without STOP and one over maxPickleBytes are errors.
func walkOps(data []byte, visit func(pickleOp) error) error {
	if len(data) > maxPickleBytes {
		return errors.Errorf("the pickle is %d bytes, more than the %d bytes this reader allows one", len(data), maxPickleBytes)
	}
	for pos := 0; pos < len(data); {
		op, next, err := readOp(data, pos)
		if err != nil {
			return err
		}
		if err := visit(op); err != nil {
			return err
		}
		if op.code == '.' {
			if next != len(data) {
				return errors.Errorf("%d bytes follow the pickle's STOP at byte %d", len(data)-next, pos)
			}
			return nil
		}
		pos = next
	}
	return errors.Errorf("the pickle ends after %d bytes without its STOP opcode", len(data))
}

// readOp reads the opcode at pos and returns it with the offset of the next.
func readOp(data []byte, pos int) (pickleOp, int, error) {
	info, ok := opcodes[data[pos]]
	if !ok {
		return pickleOp{}, 0, errors.Errorf("unknown pickle opcode 0x%02x at byte %d", data[pos], pos)
	}
	op, at := pickleOp{code: data[pos], pos: pos, lenAt: -1}, pos+1
	short := func(what string) error {
		return errors.Errorf("%s at byte %d needs %s, the pickle has %d more bytes", info.name, pos, what, len(data)-at)
	}
	switch info.kind {
	case argFixed:
		if len(data)-at < info.size {
			return op, 0, short(fmt.Sprintf("%d argument bytes", info.size))
		}
		op.arg = data[at : at+info.size]
		return op, at + info.size, nil
	case argLine, argTwoLines:
		lines := 1
		if info.kind == argTwoLines {
			lines = 2
		}
		end := at
		for range lines {
			nl := bytes.IndexByte(data[end:], '\n')
			if nl < 0 {
				return op, 0, errors.Errorf("%s at byte %d: its argument has no end of line", info.name, pos)
			}
			end += nl + 1
		}
		op.arg = data[at : end-1]
		return op, end, nil
	case argLen1, argLen4, argLen8:
		width := map[argKind]int{argLen1: 1, argLen4: 4, argLen8: 8}[info.kind]
		if len(data)-at < width {
			return op, 0, short(fmt.Sprintf("a %d-byte length", width))
		}
		n := readLength(data[at:at+width], info.name)
		op.lenAt, at = at, at+width
		if n > uint64(len(data)-at) {
			return op, 0, errors.Errorf("%s at byte %d claims %d bytes, the pickle has %d more", info.name, pos, int64(n), len(data)-at)
		}
		op.arg = data[at : at+int(n)]
		return op, at + int(n), nil
	}
	return op, at, nil
}

// readLength decodes a little-endian length; BINSTRING's and LONG4's are
// signed, so a negative one comes back as a huge uint64 that no pickle
// has room for.
func readLength(b []byte, name string) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 4:
		if name == "BINSTRING" || name == "LONG4" {
			return uint64(int64(int32(binary.LittleEndian.Uint32(b))))
		}
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

// checkGlobals refuses a pickle that names a global outside allowed (keys
// "module.name") or could reach one indirectly: STACK_GLOBAL (protocol 4,
// which torch.save and nanoGPT never write; its names come off the stack,
// so they cannot be checked here) and the copyreg extension registry.
// Every global a pickle can name passes here before the unpickler runs.
func checkGlobals(data []byte, allowed []string) error {
	return walkOps(data, func(op pickleOp) error {
		switch op.name() {
		case "GLOBAL", "INST":
			module, name, _ := strings.Cut(string(op.arg), "\n")
			global := module + "." + name
			for _, a := range allowed {
				if global == a {
					return nil
				}
			}
			return errors.Errorf("global %s (byte %d) is not allowed: %s", msg.Clean(global), op.pos, allowedList(allowed))
		case "STACK_GLOBAL", "EXT1", "EXT2", "EXT4":
			return errors.Errorf("opcode %s (byte %d) names a global this reader cannot check before running: %s", op.name(), op.pos, allowedList(allowed))
		}
		return nil
	})
}

// allowedList says which globals a pickle may name.
func allowedList(allowed []string) string {
	if len(allowed) == 0 {
		return "this file may name no global"
	}
	return "this file may name only " + strings.Join(allowed, ", ")
}
