package heads

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/pkg/errors"
)

// Scores is every pattern's score of one head. Its JSON is a list of
// records in Patterns order, the pattern a value, as every JSON the lab
// writes names things: [{"role": "previous-token", "score": 0.73}, ...].
// It reads that and the object a run written before wrote
// ({"previous-token": 0.73, ...}).
type Scores map[Pattern]float64

// scoreRecord is one pattern's score in JSON.
type scoreRecord struct {
	Role  Pattern `json:"role"`
	Score float64 `json:"score"`
}

// MarshalJSON writes the scores as records, in Patterns order (any
// pattern Patterns does not list after them, by name).
func (s Scores) MarshalJSON() ([]byte, error) {
	var others []Pattern
	for p := range s {
		if !slices.Contains(Patterns, p) {
			others = append(others, p)
		}
	}
	slices.Sort(others)
	out := []scoreRecord{}
	for _, p := range append(slices.Clone(Patterns), others...) {
		if v, ok := s[p]; ok {
			out = append(out, scoreRecord{p, v})
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads records, or the object of a run written before.
func (s *Scores) UnmarshalJSON(raw []byte) error {
	*s = Scores{}
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		var old map[Pattern]float64
		if err := json.Unmarshal(raw, &old); err != nil {
			return err
		}
		for p, v := range old {
			(*s)[p] = v
		}
		return nil
	}
	var records []scoreRecord
	if err := json.Unmarshal(raw, &records); err != nil {
		return err
	}
	for _, r := range records {
		if _, dup := (*s)[r.Role]; dup {
			return errors.Errorf("scores: role %q listed twice", r.Role)
		}
		(*s)[r.Role] = r.Score
	}
	return nil
}
