// Package initfrom keeps the record a fine-tuning run (init_from) makes of
// the pretrained model it starts from: where it was, what it is and every
// file read with its size and SHA-256 (Record, kept in the run's
// config.yaml and every checkpoint as the config's "init"), and the run's
// copies of its tokenizer files.
//
// Conventions:
//   - A recorded file is checked against its content now (FileRecord.Check,
//     Record.CheckFiles) before a run reads the pretrained model again; a
//     file changed or gone is refused in one line naming it, both sizes and
//     digests, and what to do.
//   - The run copies its tokenizer files into its directory as CopyName
//     names them (init-tokenizer.json, ...: the prefix keeps a user's own
//     tokenizer.json from passing for a run's file), each checked against
//     the record as it is copied (Record.CopyTokenizer). Package rundir
//     counts the copies among a run directory's files (IsCopy).
//   - A run's tokenizer copies are read only as files of their own, once:
//     OpenCopy opens one with O_NOFOLLOW (safefile.OpenOwn), its reads
//     hashed, and CheckCopy checks the bytes the tokenizer was built from
//     against the record.
package initfrom
