package tokenizer

// GPT-2's byte-to-unicode table writes every byte as a printable character
// so that a vocabulary file can hold any bytes as text: the printable bytes
// '!'..'~', '¡'..'¬' and '®'..'ÿ' stand for themselves, and the other 68
// bytes, in order, for U+0100 onwards (the space, 0x20, is 'Ġ' = U+0120).
var byteRunes, runeBytes = byteLevelTables()

// byteLevelTables builds the table and its inverse, indexed by rune (every
// character of the table is below U+0100 + 68).
func byteLevelTables() (toRune [256]rune, toByte map[rune]byte) {
	printable := func(b int) bool {
		return '!' <= b && b <= '~' || 0xA1 <= b && b <= 0xAC || 0xAE <= b && b <= 0xFF
	}
	toByte = make(map[rune]byte, 256)
	next := rune(0x100)
	for b := range 256 {
		r := rune(b)
		if !printable(b) {
			r = next
			next++
		}
		toRune[b] = r
		toByte[r] = byte(b)
	}
	return toRune, toByte
}

// byteLevelDecode turns a vocabulary entry written with the byte-to-unicode
// table back into its bytes. ok is false, and bad the first character
// outside the table, when s holds one.
func byteLevelDecode(s string) (b []byte, bad rune, ok bool) {
	b = make([]byte, 0, len(s))
	for _, r := range s {
		v, in := runeBytes[r]
		if !in {
			return nil, r, false
		}
		b = append(b, v)
	}
	return b, 0, true
}
