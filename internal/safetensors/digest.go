package safetensors

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strings"

	"github.com/pkg/errors"
)

// DigestKey is the metadata key under which Write records the SHA-256 of the
// data section (the bytes after the header, in file order), as 64 lowercase
// hex digits. Readers check it and hand back the metadata without it.
const DigestKey = "data_sha256"

// takeDigest removes DigestKey from metadata and returns its value, "" when
// the file records none. A value that cannot be a SHA-256 is an error: the
// header itself is damaged.
func takeDigest(metadata map[string]string) (string, error) {
	digest, ok := metadata[DigestKey]
	if !ok {
		return "", nil
	}
	delete(metadata, DigestKey)
	if len(digest) != 2*sha256.Size || strings.Trim(digest, "0123456789abcdef") != "" {
		shown := digest
		if len(shown) > 2*sha256.Size {
			shown = shown[:2*sha256.Size] + "..."
		}
		return "", errors.Errorf("%s %q: %q is not a SHA-256 (64 hex digits 0-9a-f)", metadataKey, DigestKey, shown)
	}
	return digest, nil
}

// withDigest returns a copy of metadata with DigestKey set to the SHA-256 of
// the tensors' data, in order. The caller's metadata may not set DigestKey.
func withDigest(tensors []Tensor, metadata map[string]string) (map[string]string, error) {
	if _, ok := metadata[DigestKey]; ok {
		return nil, errors.Errorf("safetensors: metadata key %q is reserved: Write records the SHA-256 of the tensor data there", DigestKey)
	}
	h := sha256.New()
	for _, t := range tensors {
		h.Write(t.Data)
	}
	out := make(map[string]string, len(metadata)+1)
	for k, v := range metadata {
		out[k] = v
	}
	out[DigestKey] = hex.EncodeToString(h.Sum(nil))
	return out, nil
}

// checkDigest compares the SHA-256 of section with recorded; an empty
// recorded (a file without a digest) checks nothing.
func checkDigest(recorded string, section []byte) error {
	if recorded == "" {
		return nil
	}
	h := sha256.New()
	h.Write(section)
	return compareDigest(recorded, h)
}

// compareDigest compares the sum of h, which has hashed the whole data
// section, with recorded.
func compareDigest(recorded string, h hash.Hash) error {
	found := hex.EncodeToString(h.Sum(nil))
	if found != recorded {
		return errors.Errorf("tensor data does not match its %s (recorded %s..., found %s...): the file is corrupt or was edited",
			DigestKey, recorded[:8], found[:8])
	}
	return nil
}
