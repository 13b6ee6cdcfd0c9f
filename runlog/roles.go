package runlog

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/heads"
)

// RoleRows is how many held-out rows each line of roles.jsonl scores the
// heads on: the first RoleRows rows of the run's held-out set, the same
// rows at every evaluation (train writes it so).
const RoleRows = 32

// RolesRecord is one line of roles.jsonl: every head's score of each role
// (pattern of package heads) at one evaluation. In memory it is a
// [layer][head] grid; in the file each head is a record (MarshalJSON):
//
//	{"step":50,"roles":["duplicate-token",...,"self"],
//	 "heads":[{"layer":0,"head":0,"scores":[0.01,...,0.9]},...]}
//
// "roles" names the roles once, in sorted order, and each head's "scores"
// follow it (null where the head has no score of that role). Runs written
// before hold the older shape {"step":50,"heads":[[{"self":0.9,...},...]]},
// with the roles as keys; UnmarshalJSON reads both.
type RolesRecord struct {
	Step  int
	Heads [][]map[heads.Pattern]float64 // [layer][head] role -> score
}

// headID is where a head is, as a record of a log names it.
type headID struct {
	Layer int `json:"layer"`
	Head  int `json:"head"`
}

func (id headID) where() headID { return id }

// headRoles is a head's record in a line of roles.jsonl.
type headRoles struct {
	headID
	Scores []*float64 `json:"scores"` // in the line's "roles" order
}

// rolesLine is a line of roles.jsonl as written.
type rolesLine struct {
	Step  int             `json:"step"`
	Roles []heads.Pattern `json:"roles"`
	Heads []headRoles     `json:"heads"`
}

// MarshalJSON writes the record as a line of roles.jsonl.
func (r RolesRecord) MarshalJSON() ([]byte, error) {
	line := rolesLine{Step: r.Step, Roles: roleNames(r.Heads), Heads: []headRoles{}}
	for l, layer := range r.Heads {
		for h, scores := range layer {
			rec := headRoles{headID: headID{Layer: l, Head: h}, Scores: make([]*float64, len(line.Roles))}
			for i, role := range line.Roles {
				if s, ok := scores[role]; ok {
					rec.Scores[i] = &s
				}
			}
			line.Heads = append(line.Heads, rec)
		}
	}
	return json.Marshal(line)
}

// UnmarshalJSON reads a line of roles.jsonl of either shape.
func (r *RolesRecord) UnmarshalJSON(b []byte) error {
	var line struct {
		Step  int             `json:"step"`
		Roles []heads.Pattern `json:"roles"`
		Heads json.RawMessage `json:"heads"`
	}
	if err := json.Unmarshal(b, &line); err != nil {
		return err
	}
	*r = RolesRecord{Step: line.Step}
	if len(line.Heads) == 0 {
		return nil
	}
	if line.Roles == nil { // the older shape: the roles are keys
		return json.Unmarshal(line.Heads, &r.Heads)
	}
	var list []headRoles
	if err := json.Unmarshal(line.Heads, &list); err != nil {
		return err
	}
	if dup := firstRepeat(line.Roles); dup != "" {
		return errors.Errorf("role %q is listed twice", dup)
	}
	layers, err := layerCount(list)
	if err != nil {
		return err
	}
	r.Heads = make([][]map[heads.Pattern]float64, layers)
	for _, rec := range list {
		if len(rec.Scores) != len(line.Roles) {
			return errors.Errorf("layer %d head %d has %d scores for %d roles", rec.Layer, rec.Head, len(rec.Scores), len(line.Roles))
		}
		scores := make(map[heads.Pattern]float64, len(rec.Scores))
		for i, s := range rec.Scores {
			if s != nil {
				scores[line.Roles[i]] = *s
			}
		}
		r.Heads[rec.Layer] = append(r.Heads[rec.Layer], scores)
	}
	return nil
}

func (r RolesRecord) step() int { return r.Step }

func (r RolesRecord) nonFinite() (string, float64, bool) {
	roles := roleNames(r.Heads)
	for l, layer := range r.Heads {
		for h, scores := range layer {
			for _, role := range roles {
				if s, ok := scores[role]; ok && !isFinite(s) {
					return fmt.Sprintf("the %s score of layer %d head %d", role, l, h), s, true
				}
			}
		}
	}
	return "", 0, false
}

// roleNames lists, sorted, every role some head of grid has a score of.
func roleNames(grid [][]map[heads.Pattern]float64) []heads.Pattern {
	seen := map[heads.Pattern]bool{}
	for _, layer := range grid {
		for _, scores := range layer {
			for role := range scores {
				seen[role] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// firstRepeat is the first role listed twice in roles, "" if none.
func firstRepeat(roles []heads.Pattern) heads.Pattern {
	seen := map[heads.Pattern]bool{}
	for _, role := range roles {
		if seen[role] {
			return role
		}
		seen[role] = true
	}
	return ""
}

// layerCount checks that a line's head records list every head once, layer
// by layer from layer 0 and within a layer from head 0 up, as the grid of a
// model has them, and returns the number of layers.
func layerCount[T interface{ where() headID }](list []T) (int, error) {
	next := headID{}
	for _, rec := range list {
		id := rec.where()
		switch {
		case id == next:
		case id == headID{Layer: next.Layer + 1} && next.Head > 0:
			next = id
		default:
			return 0, errors.Errorf("head record (layer %d, head %d) out of order: want layer %d head %d next (heads are listed layer by layer, each from head 0)", id.Layer, id.Head, next.Layer, next.Head)
		}
		next.Head++
	}
	if next.Head == 0 {
		return next.Layer, nil
	}
	return next.Layer + 1, nil
}

// maxScoreBytes bounds one score in a line of roles.jsonl or
// circuits.jsonl: a number of at most 24 characters and a comma, or in the
// older roles shape also its quoted role name (at most 20 characters) and a
// colon.
const maxScoreBytes = 64

// MaxRolesBytes is the most a run of steps steps of a model of headCount
// heads (all layers) writes to roles.jsonl, in either shape: at most one line
// per step, each a step and the roles' names (in maxLineBytes), and per head
// its place and a score for every role (heads.Patterns, and one spare).
func MaxRolesBytes(steps, headCount int) int64 {
	perHead := int64(len(heads.Patterns)+1)*maxScoreBytes + 8
	return int64(max(steps, 0)+1) * (maxLineBytes + int64(max(headCount, 0))*perHead)
}
