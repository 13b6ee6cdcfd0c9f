package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const induction = "../../testdata/induction/checkpoint.safetensors"

func sample(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := sampleNoted(t, args...)
	return out, err
}

// sampleNoted is sample with what it wrote on stderr.
func sampleNoted(t *testing.T, args ...string) (out, notes string, err error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err = run(args, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// TestExamplesMarkEveryToken: held-out examples are written to their
// answer's end, and the exact-match count equals the rows printed "exact".
func TestExamplesMarkEveryToken(t *testing.T) {
	out, err := sample(t, "-checkpoint", induction, "-samples", "12")
	if err != nil {
		t.Fatal(err)
	}
	exact := strings.Count(out, "   exact\n")
	m := regexp.MustCompile(`exact match (\d+)/12\n`).FindStringSubmatch(out)
	if m == nil || m[1] != strconv.Itoa(exact) || strings.Count(out, "     target  ") != 12 {
		t.Fatalf("%d rows printed exact, summary %v:\n%s", exact, m, out)
	}
	for _, block := range strings.Split(out, "\n#")[1:] {
		lines := strings.Split(block, "\n")
		target, model := strings.Fields(strings.TrimPrefix(lines[1], "     target")), strings.Fields(strings.TrimPrefix(lines[2], "     model"))
		wrong := 0
		for k := range target {
			if model[k] != target[k] {
				wrong++
			}
		}
		if marks := strings.Count(strings.Join(lines[3:], "\n"), "^"); marks != wrong {
			t.Errorf("%d wrong tokens, %d marks:\n#%s", wrong, marks, block)
		}
	}
}

// TestEvalAgreesWithTeacherForcing: -eval's exact match equals the
// teacher-forced sequence accuracy (each answer token's input is the
// previous target), with and without the cache.
func TestEvalAgreesWithTeacherForcing(t *testing.T) {
	re := regexp.MustCompile(`teacher-forced +token_acc [0-9.]+ +seq_acc ([0-9.]+) +\((\d+)/1000\)\nwritten alone +token_acc [0-9.]+ +exact +([0-9.]+) +\((\d+)/1000\)`)
	var seen []string
	for _, args := range [][]string{{"-eval"}, {"-eval", "-no-cache"}} {
		out, err := sample(t, append([]string{"-checkpoint", induction}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		m := re.FindStringSubmatch(out)
		if m == nil || m[1] != m[3] || m[2] != m[4] {
			t.Fatalf("%v:\n%s", args, out)
		}
		seen = append(seen, m[4])
	}
	if seen[0] != seen[1] {
		t.Errorf("exact %s with the cache, %s without", seen[0], seen[1])
	}
}

// TestSampledIsSeededAndCacheFree: a sampled continuation repeats under its
// seed, changes with it, and is the same without the cache.
func TestSampledIsSeededAndCacheFree(t *testing.T) {
	args := []string{"-checkpoint", induction, "-tokens", "3 1 4 1 5", "-n", "12", "-temperature", "2", "-top-k", "20", "-samples", "3"}
	a, err := sample(t, append(args, "-seed", "7")...)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := sample(t, append(args, "-seed", "7")...)
	c, _ := sample(t, append(args, "-seed", "7", "-no-cache")...)
	d, _ := sample(t, append(args, "-seed", "8")...)
	if a != b || a != c || a == d || strings.Count(a, "--- sample") != 3 {
		t.Fatalf("seed 7:\n%s\nagain:\n%s\nno cache:\n%s\nseed 8:\n%s", a, b, c, d)
	}
	for _, line := range strings.Split(strings.TrimSpace(a), "\n") {
		if _, rest, ok := strings.Cut(line, " | "); ok && len(strings.Fields(rest)) != 12 {
			t.Errorf("%q: want 12 written tokens", line)
		}
	}
}

// TestBadFlags: each is one line naming the flag and what is allowed.
func TestBadFlags(t *testing.T) {
	ck := []string{"-checkpoint", induction}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "no model: give one"},
		{[]string{induction, "extra"}, `unexpected argument "extra" (one model, already given as "` + induction + `"; see -h)`},
		{append(ck, "runs/other"), `-checkpoint "` + induction + `" and the argument "runs/other" name different paths`},
		{append(ck, "-temperature", "-1"), "-temperature -1: must be 0 (greedy) or positive"},
		{append(ck, "-top-p", "0"), "-top-p 0: must be in (0, 1]"},
		{append(ck, "-top-p", "1.5"), "-top-p 1.5: must be in (0, 1]"},
		{append(ck, "-top-k", "-3"), "-top-k -3"},
		{append(ck, "-tokens", "1 2 99"), "token 99 at position 2 is outside the vocabulary [0, 32)"},
		{append(ck, "-prompt", "1 2 cat"), `"cat" (token 2) is not a token of task induction`},
		{append(ck, "-crop"), "-crop lets a continuation of -prompt or -tokens pass the model's context"},
		{append(ck, "-prompt", "1 2\xff"), "-prompt: byte 3 (0xff) is not valid UTF-8"},
		{append(ck, "-text", "1 2\xff"), "-text: byte 3 (0xff) is not valid UTF-8"},
		{append(ck, "-text", "1 2 cat"), `-text: "cat" (token 2) is not a token of task induction`},
		{append(ck, "-tokens", "1 2", "-raw"), "-raw writes a text model's characters as they are; task induction prints labels"},
		{append(ck, "-tokens", "1", "-prompt", "2"), "use one"},
		{append(ck, "-eval", "-temperature", "1"), "-eval writes greedily"},
		{append(ck, "-n", "5"), "-n is the length written after a prompt"},
		{append(ck, "-samples", "0"), "-samples 0: must be in [1, 1024]"},
		{[]string{"-checkpoint", "no/such.safetensors"}, "no such file"},
	} {
		_, err := sample(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line containing %q", c.args, err, c.want)
		}
	}
}

// TestModelArgument: the model given as the first argument, before or after
// the flags, writes what -checkpoint writes.
func TestModelArgument(t *testing.T) {
	want, err := sample(t, "-checkpoint", induction, "-samples", "2")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{induction, "-samples", "2"}, {"-samples", "2", induction}} {
		if got, err := sample(t, args...); err != nil || got != want {
			t.Errorf("%q: %v, printed\n%s\nwant what -checkpoint prints:\n%s", args, err, got, want)
		}
	}
}

// TestHelp: -h prints the usage and the flags on stdout, nothing on
// stderr, and succeeds; -samples shows its two defaults in its text and no
// third "(default N)" of the flag package.
func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"-h"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	at := strings.Index(help, "\n  -samples int\n")
	if at < 0 {
		t.Fatalf("-h printed no -samples: %q", help)
	}
	samples := help[at+1:]
	samples = samples[:strings.Index(samples[1:], "\n  -")+1]
	if !strings.HasPrefix(help, "usage: sample MODEL") || errOut.Len() > 0 || strings.Count(samples, "default") != 2 {
		t.Errorf("-h printed stdout %q, stderr %q; -samples reads %q", help, errOut.String(), samples)
	}
}
