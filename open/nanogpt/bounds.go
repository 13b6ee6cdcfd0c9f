package nanogpt

import (
	"encoding/binary"
	"strconv"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
)

// Bounds on what a pickle states, checked on its opcodes before gopickle
// sees them. gopickle allocates every size it reads (a FRAME's, a
// string's) before reading what it sizes, decodes a long integer in
// quadratic time, keeps every memo entry, and gives every MARK a stack of
// its own, so none of these reaches it unchecked.
const (
	// maxIntBytes bounds LONG1's and LONG4's integers: a nanoGPT checkpoint
	// holds none past 64 bits.
	maxIntBytes = 8
	// maxIntDigits bounds the decimal integers of INT and LONG (2^64 has
	// 20 digits).
	maxIntDigits = 20
	// maxMemo bounds the memo's indexes, and so its entries. torch.save
	// memoizes about 8 values per storage (the test fixture 962 for 116
	// storages): this is room for some 30,000 storages.
	maxMemo = 1 << 18
	// maxUnpickledBytes bounds unpickleCost summed over a pickle. The test
	// fixture's 12 KB data.pkl costs about 0.8 MB, so this admits a
	// data.pkl of about 1 MB, some 20 times GPT-2 small's.
	maxUnpickledBytes = 64 << 20
)

// checkBounds refuses a pickle that states a size past its bounds: a FRAME
// longer than the bytes that remain, an integer past 64 bits, a memo index
// at or past maxMemo or one read before it is written, or opcodes whose
// values would take more than maxUnpickledBytes to build. Lengths of
// strings and bytes are checked against the bytes that remain by walkOps,
// and the stream against maxPickleBytes.
func checkBounds(data []byte) error {
	b := &bounds{data: data}
	return walkOps(data, b.check)
}

// bounds is the state of checkBounds' walk.
type bounds struct {
	data []byte
	memo [maxMemo / 64]uint64 // the memo indexes written, one bit each
	// entries is how many memo indexes are written: MEMOIZE's index.
	entries int
	cost    int
}

func (b *bounds) check(op pickleOp) error {
	b.cost += unpickleCost(op)
	if b.cost > maxUnpickledBytes {
		return errors.Errorf("%s at byte %d: the values of the pickle up to here would take more than %s to build, the most this reader allows a pickle",
			op.name(), op.pos, msg.Bytes(maxUnpickledBytes))
	}
	switch op.name() {
	case "FRAME":
		size, rest := binary.LittleEndian.Uint64(op.arg), len(b.data)-op.pos-1-len(op.arg)
		if size > uint64(rest) {
			return errors.Errorf("FRAME at byte %d claims %d bytes, the pickle has %d more", op.pos, size, rest)
		}
	case "LONG1", "LONG4":
		if len(op.arg) > maxIntBytes {
			return errors.Errorf("%s at byte %d is an integer of %d bytes; this reader takes integers of up to %d bytes (a nanoGPT checkpoint holds none larger)",
				op.name(), op.pos, len(op.arg), maxIntBytes)
		}
	case "INT", "LONG":
		if n := decimalDigits(op.arg); n > maxIntDigits {
			return errors.Errorf("%s at byte %d is an integer of %d digits; this reader takes integers of up to %d digits (a nanoGPT checkpoint holds none larger)",
				op.name(), op.pos, n, maxIntDigits)
		}
	case "PUT", "BINPUT", "LONG_BINPUT":
		return b.put(op, memoIndex(op))
	case "MEMOIZE":
		return b.put(op, b.entries)
	case "GET", "BINGET", "LONG_BINGET":
		return b.get(op, memoIndex(op))
	}
	return nil
}

// put notes that op writes the memo at index.
func (b *bounds) put(op pickleOp, index int) error {
	if index < 0 || index >= maxMemo {
		return errors.Errorf("%s at byte %d writes memo index %s; this reader allows indexes below %d",
			op.name(), op.pos, describeIndex(op, index), maxMemo)
	}
	if b.memo[index/64]&(1<<(index%64)) == 0 {
		b.memo[index/64] |= 1 << (index % 64)
		b.entries++
	}
	return nil
}

// get refuses op reading a memo index nothing wrote (where gopickle would
// silently push None).
func (b *bounds) get(op pickleOp, index int) error {
	if index < 0 || index >= maxMemo || b.memo[index/64]&(1<<(index%64)) == 0 {
		return errors.Errorf("%s at byte %d reads memo index %s, which nothing wrote", op.name(), op.pos, describeIndex(op, index))
	}
	return nil
}

// memoIndex is the memo index a PUT or GET names: a decimal line, one byte
// or four little-endian ones; -1 for a line that is no index.
func memoIndex(op pickleOp) int {
	switch len(op.arg) {
	case 1:
		if op.name() == "BINPUT" || op.name() == "BINGET" {
			return int(op.arg[0])
		}
	case 4:
		if op.name() == "LONG_BINPUT" || op.name() == "LONG_BINGET" {
			return int(binary.LittleEndian.Uint32(op.arg))
		}
	}
	if len(op.arg) > maxIntDigits {
		return -1
	}
	n, err := strconv.Atoi(string(op.arg))
	if err != nil {
		return -1
	}
	return n
}

// describeIndex is a memo index for a message: the line that is no index
// quoted.
func describeIndex(op pickleOp, index int) string {
	if index < 0 {
		return msg.Quote(string(op.arg))
	}
	return strconv.Itoa(index)
}

// decimalDigits counts the digits of an INT's or LONG's argument: the
// line without its sign and Python 2's trailing L.
func decimalDigits(line []byte) int {
	n := len(line)
	if n > 0 && (line[0] == '-' || line[0] == '+') {
		n--
	}
	if n > 0 && line[len(line)-1] == 'L' {
		n--
	}
	return n
}

// unpickleCost is a generous estimate of the bytes gopickle allocates for
// op: every value pushed takes a stack slot, may be filed into a dict, list
// or the memo later, and copies a string's bytes twice; a MARK starts a
// stack of 16 slots, and a container starts with room for a few entries.
func unpickleCost(op pickleOp) int {
	const (
		value     = 128 // a pushed value, its slot and its entry in a container
		stack     = 320 // MARK's new stack and its slot on the meta stack
		container = 256 // an empty dict, set or list, an OrderedDict, a tensor
		memoEntry = 64
	)
	cost := value + 2*len(op.arg)
	switch op.name() {
	case "MARK":
		cost += stack
	case "EMPTY_DICT", "EMPTY_SET", "EMPTY_LIST", "DICT", "LIST", "TUPLE", "FROZENSET",
		"REDUCE", "NEWOBJ", "NEWOBJ_EX", "OBJ", "INST", "BINPERSID", "PERSID":
		cost += container
	case "PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE":
		cost += memoEntry
	}
	return cost
}
