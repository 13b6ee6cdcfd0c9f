// Package safefile opens, reads and writes files so that no input can make a
// command hang, exhaust memory or destroy a file by accident.
//
// Conventions:
//   - Every reader opens through OpenRegular: a path that is not a regular
//     file once symlinks are followed (a named pipe, a device such as
//     /dev/zero, a directory, a socket) is refused with an error naming what
//     it is, before anything could block on it. The open itself never waits
//     (O_NONBLOCK), so a pipe with no writer is refused, not waited for.
//   - ReadLimit reads a whole file only if it is no larger than a limit the
//     caller derives from what the file can legitimately hold; OpenLimit
//     applies the same limit to a file read as a stream (by a decoder that
//     checks as it reads), before the first byte and at every read.
//   - OpenOwn opens a file of a run directory, or one found rather than
//     named (a meta.pkl beside a checkpoint), without following a link
//     (O_NOFOLLOW), as OpenForWrite writes one; ReadLimitOwn reads one whole
//     as ReadLimit does.
//   - HashedFile (OpenHashed) hashes a file as its reader consumes it, one
//     open, so its Digest is of the bytes loaded, whatever replaces the path
//     meanwhile; reads out of order are checked in a second pass through the
//     same descriptor. A reader that must parse what its caller hashed
//     takes the open file (Sized: ReadSized, LimitSized bound it as
//     ReadLimit and OpenLimit bound a path), never its path.
//   - WriteFileAtomic replaces a file so that a crash or an error leaves either
//     the complete old file or the complete new one, never a mixture.
//     WriteFileAtomicAt does the same for a writer that patches bytes it
//     already wrote (a seal known only at the end). Stage stops before the
//     rename: a Staged file can be given a second name (LinkAs, a hard link
//     renamed into place) and then committed; every name is replaced by
//     rename, never written in place, so a linked name keeps its bytes.
//     WriteDirAtomic does the same for a directory of files (an exported
//     model), which must be new or empty (CheckNewDir): it is written
//     whole beside its place and renamed there.
//   - An output path is never an input: CheckOutput is the one rule for every
//     output file of every command, and WriteOutput writes by it. It refuses
//     a path that is one of the command's inputs (every file it reads or may
//     read: by device and inode, and, there or not, by name in its
//     directory), an existing path that is not a regular file (a symlink, a
//     pipe, a device), or what the caller's Guard refuses (the commands pass
//     rundir.RefuseRunFile: a run's file); the file is written atomically
//     beside the target.
//   - Errors name the path once and carry the os error (errors.Is with
//     fs.ErrNotExist still holds).
package safefile
