package msg

import "fmt"

// Bytes prints a byte count for a message with a binary unit, one decimal
// past bytes: "512 B", "3.0 TiB". An absurd estimate still prints plainly,
// in ZiB or YiB ("22.9 ZiB").
func Bytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", b)
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}
