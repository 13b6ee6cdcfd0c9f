// Package ablation measures how much each attention head matters: it runs a
// held-out set once with every head intact and once per head with that
// head's output removed, and reports the loss and accuracy each time.
//
// Conventions:
//   - A head is removed through a hook on the layer's head outputs
//     (model.BuildOptions.Hooks, model.HeadOut): its output (B, H, T, d) is
//     replaced before the head merge. Zero ablation fills zeros; mean ablation
//     fills the head's output averaged over the set's examples, position by
//     position, from the intact run. Nothing is recomputed outside the
//     graph, and the same graph serves both attention paths.
//   - Scores are over the positions the set's loss mask scores: loss is the
//     mean cross-entropy there, token accuracy the share of them whose argmax
//     is the target, exact match the share of examples (with at least one
//     scored position) right at every scored position.
//   - Run removes the heads it is given (Heads: (layer, head) pairs, nil
//     for every head, layer by layer); its progress callback, when not
//     nil, hears the heads done of those after the intact run and after
//     each head.
//   - Table.Rows is sorted by importance: the change in loss, largest
//     first; ties by layer then head. The JSON tags are what inspect -json
//     prints under "ablation".
package ablation
