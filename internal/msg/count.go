package msg

import "fmt"

// Count is n and the noun, plural past one: "1 layer", "2 layers".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
