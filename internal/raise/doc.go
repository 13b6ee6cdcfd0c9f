// Package raise lets a graph builder report errors the way encoding/json and
// text/template do internally: a failing step inside the build raises its
// error (If, Must), and the exported function that started the build
// recovers it (a deferred Catch) and returns it as an ordinary error.
//
// Conventions:
//   - Only exported entry points (a layer's Forward, model.Build) defer
//     Catch; everything they call raises. No raised error crosses a
//     package's API: callers outside see the usual (value, error) results.
//   - Catch recovers only errors raised here; any other panic (a bug, a
//     runtime error) is re-raised unchanged, stack and all.
//   - Raise only for failures of the build (a Gorgonia op refusing its
//     inputs, a size check); user input is validated before a build starts.
package raise
