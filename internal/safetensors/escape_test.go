package safetensors

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/attnscope/attnscope/internal/escape/escapetest"
	"github.com/attnscope/attnscope/internal/msg/msgtest"
)

// TestHostileHeaderValues: every header value a message echoes (a tensor
// name, a dtype, a shape, data_offsets, a metadata key or value, a field
// name, JSON whitespace) holding the hostile string is refused in
// one line with no character a terminal acts on (issue 42: a bidi
// override, NEL or DEL in a header value reached the terminal raw), by
// Read and by Open alike.
func TestHostileHeaderValues(t *testing.T) {
	p := escapetest.Payload
	for _, c := range []struct{ name, header string }{
		{"tensor name", `{"` + p + `":{"dtype":"X","shape":[1],"data_offsets":[0,1]}}`},
		{"dtype", `{"a":{"dtype":"` + p + `","shape":[1],"data_offsets":[0,1]}}`},
		{"dtype not a string", `{"a":{"dtype":["` + p + `"],"shape":[1],"data_offsets":[0,1]}}`},
		{"shape", `{"a":{"dtype":"U8","shape":["` + p + `"],"data_offsets":[0,1]}}`},
		{"data_offsets", `{"a":{"dtype":"U8","shape":[1],"data_offsets":["` + p + `"]}}`},
		{"data_offsets across lines", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":{\n\"\u202e\":1}}}"},
		{"unknown field", `{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"` + p + `":1}}`},
		{"metadata value", `{"__metadata__":{"k":["` + p + `"]}}`},
		{"metadata key", `{"__metadata__":{"` + p + `":1}}`},
		{"digest", `{"__metadata__":{"data_sha256":"` + p + `"}}`},
		{"duplicate", `{"` + p + `":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"` + p + `":{}}`},
	} {
		data := file(c.header, []byte{0})
		_, _, err := Read(data)
		if msgtest.Refusal(t, c.name+": Read", err) {
			escapetest.Check(t, c.name+": Read", []byte(err.Error()), "")
		}
		path := filepath.Join(t.TempDir(), "hostile.safetensors")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path, MaxFileLen)
		if err == nil {
			f.Close()
		}
		if msgtest.Refusal(t, c.name+": Open", err) {
			escapetest.Check(t, c.name+": Open", []byte(err.Error()), "")
		}
	}
}
