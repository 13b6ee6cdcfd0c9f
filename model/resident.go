package model

import (
	"bufio"
	"bytes"
	"os"
	"strconv"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
)

// ResidentMargin is the memory CheckResident leaves free besides what it
// is asked to hold: for the activations (bounded on their own by
// MaxMemory), the tokenizer, the Go runtime and the rest of the machine.
const ResidentMargin = 1 << 30

// MemAvailable is the kernel's estimate of the memory a new workload can
// take without swapping (MemAvailable of /proc/meminfo: free memory plus
// the page cache and reclaimable slabs it can give back), in bytes; ok is
// false where it cannot be read (not Linux).
func MemAvailable() (bytes float64, ok bool) {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	return parseKB(raw, "MemAvailable:")
}

// MemAvailableHere is MemAvailable plus what this process already holds
// resident (VmRSS of /proc/self/status): the memory a run in this process
// can count on when its estimate includes what the process has already
// read, such as a fine-tuning run's pretrained weights, which would
// otherwise be counted twice, in the estimate and as memory no longer
// available.
func MemAvailableHere() (bytes float64, ok bool) {
	avail, ok := MemAvailable()
	if !ok {
		return 0, false
	}
	return avail + ownResident(), true
}

// ownResident is this process's resident set (VmRSS), 0 where it cannot be
// read.
func ownResident() float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	own, _ := parseKB(raw, "VmRSS:")
	return own
}

// parseKB reads the "<key>  123456 kB" line of a /proc/meminfo or a
// /proc/PID/status, in bytes.
func parseKB(raw []byte, key string) (float64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) == 3 && string(fields[0]) == key && string(fields[2]) == "kB" {
			kb, err := strconv.ParseFloat(string(fields[1]), 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}

// CheckResident refuses what needs bytes of memory that must stay resident
// (a model's weights: mapped file pages evicted under pressure are read
// again from disk on every use, a decode at disk speed) when bytes plus
// ResidentMargin exceed what the machine has available (MemAvailable),
// before the work starts and with both figures: "<what> needs 16.1 GB
// resident; the machine has 12.0 GB available (MemAvailable, with 1.0 GiB
// kept free)". Where MemAvailable cannot be read it checks nothing.
func CheckResident(bytes float64, what string) error {
	avail, ok := MemAvailable()
	if !ok {
		return nil
	}
	return CheckResidentWithin(bytes, avail, what)
}

// CheckResidentWithin is CheckResident against avail bytes available.
func CheckResidentWithin(bytes, avail float64, what string) error {
	if bytes+ResidentMargin <= avail {
		return nil
	}
	return errors.Errorf("%s needs %s resident; the machine has %s available (MemAvailable, with %s kept free)",
		what, msg.Bytes(bytes), msg.Bytes(avail), msg.Bytes(ResidentMargin))
}
