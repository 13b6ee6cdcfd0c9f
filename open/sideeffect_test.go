package open

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// freshProcessEnv makes the test binary run TestOpenLlamaAllocates's
// measurement, in a process of its own.
const freshProcessEnv = "ATTNSCOPE_OPEN_FRESH_PROCESS"

// TestOpenLlamaAllocates is the measurement TestLlamaBuildsNoGPT2Tokenizer
// runs in a fresh process: the bytes Open allocates for the Llama fixture
// (2 layers of 16, no tokenizer files), printed on stdout. Without
// freshProcessEnv it does nothing.
func TestOpenLlamaAllocates(t *testing.T) {
	if os.Getenv(freshProcessEnv) != "1" {
		return
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := Open(filepath.Join("hf", "testdata", "llama"), Options{}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	fmt.Printf("allocated %d\n", after.TotalAlloc-before.TotalAlloc)
}

// TestLlamaBuildsNoGPT2Tokenizer: opening a Llama directory without
// tokenizer files builds nothing it does not use. GPT-2's own tokenizer
// (50,257 tokens, 50,000 merges: about 47 MB allocated) is built only for
// a GPT-2 that ships none; built for a Llama, it was a call made only for
// its side effect. GPT-2's tokenizer is built once per process, so the
// opening is measured in a fresh one: it allocates under 8 MB (about
// 0.3 MB here).
func TestLlamaBuildsNoGPT2Tokenizer(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenLlamaAllocates$", "-test.v")
	cmd.Env = append(os.Environ(), freshProcessEnv+"=1")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	_, after, ok := strings.Cut(stdout.String(), "allocated ")
	allocated, err := strconv.ParseUint(strings.Fields(after + " ")[0], 10, 64)
	if !ok || err != nil {
		t.Fatalf("the fresh process printed %q", stdout.String())
	}
	const bound = 8 << 20
	if allocated > bound {
		t.Errorf("opening a Llama without tokenizer files allocated %d bytes, over %d: GPT-2's tokenizer was built for it", allocated, bound)
	}
}
