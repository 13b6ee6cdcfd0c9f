// Package strictyaml decodes a YAML config file, or one "-set key=value"
// override, into a Go struct strictly, with one-line errors a person can act
// on. It is what rundir.ParseConfig reads run configs with.
//
// Conventions:
//   - Fields are matched by their `yaml` struct tag; nested structs are
//     sections. An unknown key, a duplicate key, a list or mapping where a
//     scalar belongs, a fraction for an integer, a non-boolean for a bool are
//     errors naming the position (file:line:column, or the -set text), the
//     dotted key, the value as written and what is allowed. A key listed in
//     Decoder.Fixed is refused with its reason.
//   - A YAML syntax error names the line and column of its culprit (the tab,
//     the stray bracket, the quote never closed), found by re-parsing
//     prefixes of the input (locate), because yaml.v3 reports only a line,
//     and sometimes the wrong one; past a budget of parsed bytes the error
//     keeps yaml.v3's line and no column.
//   - A field type may decode itself: from one scalar (Scalar, a switch
//     whose unset value means on) or from one list (List, a set of layer
//     indexes held as a comparable value); each names what it wants in the
//     error.
//   - A config is exactly one YAML document; an empty one is an error.
//   - Decoding goes over what the struct already holds, so defaults stay
//     where the file says nothing; a null section keeps its defaults.
package strictyaml
