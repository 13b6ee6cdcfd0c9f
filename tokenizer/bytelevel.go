package tokenizer

// GPT-2's byte-to-unicode table writes every byte as a printable character
// so that a vocabulary file can hold any bytes as text: the printable bytes
// '!'..'~', '¡'..'¬' and '®'..'ÿ' stand for themselves, and the other 68
// bytes, in order, for U+0100 onwards (the space, 0x20, is 'Ġ' = U+0120).
var byteRunes, runeBytes = byteLevelTables()

// tableRunes bounds the characters of the table: U+0100 + 68.
const tableRunes = 0x100 + 68

// byteLevelTables builds the table and its inverse, indexed by rune (every
// character of the table is below tableRunes), -1 for a character
// outside the table.
func byteLevelTables() (toRune [256]rune, toByte [tableRunes]int16) {
	printable := func(b int) bool {
		return '!' <= b && b <= '~' || 0xA1 <= b && b <= 0xAC || 0xAE <= b && b <= 0xFF
	}
	for r := range toByte {
		toByte[r] = -1
	}
	next := rune(0x100)
	for b := range 256 {
		r := rune(b)
		if !printable(b) {
			r = next
			next++
		}
		toRune[b] = r
		toByte[r] = int16(b)
	}
	return toRune, toByte
}

// byteLevelDecode turns a vocabulary entry written with the byte-to-unicode
// table back into its bytes. ok is false, and bad the first character
// outside the table, when s holds one.
func byteLevelDecode(s string) (b []byte, bad rune, ok bool) {
	return appendByteLevel(make([]byte, 0, len(s)), s)
}

// appendByteLevel is byteLevelDecode appending to dst.
func appendByteLevel(dst []byte, s string) (b []byte, bad rune, ok bool) {
	for _, r := range s {
		if r < 0 || r >= tableRunes || runeBytes[r] < 0 {
			return nil, r, false
		}
		dst = append(dst, byte(runeBytes[r]))
	}
	return dst, 0, true
}
