package davfs

import (
	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// Hard links: one policy, the same on every surface (REST and gRPC call the
// FS methods directly, WebDAV goes through them too).
//
// A regular file with more than one hard link may be another name of a
// file davfs must never expose: an agent can run
// `ln ~/.codex/auth.json ~/.codex/skills/x`, and skills/x is then the same
// inode as auth.json, which no path check can tell. So, for such a file:
//
//   - its bytes are never read, copied, written or replaced: ReadFile,
//     OpenRead and OpenReader (and so the source of a WebDAV COPY, which
//     reads through them), UpdateFile and WriteStream onto it (PUT, and
//     the write of a COPY onto it), and a delete that makes room for a
//     replacement (DeleteOptions.Replace: COPY or MOVE with Overwrite: T)
//     are refused with PermissionDenied/MULTIPLE_LINKS. The decisive check
//     is an fstat of an fd of the file itself: the fd a read then reads
//     from, or an O_PATH reference taken under the mutation lock right
//     before the rename or unlink that would replace it;
//   - its name may be deleted (DeleteEntry, recursive deletes included)
//     and renamed within its workspace (MoveEntry, which never replaces an
//     existing name): neither touches the bytes, neither makes a new name
//     for them outside the workspace the name is already in, and deleting
//     is how an administrator removes a planted link;
//   - it is listed, with Entry.MultipleLinks set (Reason
//     NotEditableMultipleLinks) and a stat-only revision (no content hash,
//     which would leak a digest of the other file), so that a surface can
//     show it as not editable or hide it (WebDAV listings hide it).
//
// Limit: a link made by another process after the fstat and before the
// rename or unlink is not seen; what is replaced or removed then is the
// name only, and the other names keep their bytes.

// linkOp is what an operation does to a regular file.
type linkOp int

const (
	linkRead    linkOp = iota // read or copy the bytes
	linkWrite                 // write the bytes or replace the name with other bytes
	linkReplace               // delete the name to make room for a replacement
	linkDelete                // delete the name
	linkRename                // give the name another name in the same workspace
)

// linkAllowed is the policy: may op be done to a regular file that has
// more than one hard link?
func linkAllowed(op linkOp) bool {
	switch op {
	case linkDelete, linkRename:
		return true
	}
	return false
}

// checkLinks refuses op on st (the fstat of an fd of the file, where the
// policy above says so) when st is a regular file with several links.
func checkLinks(st *unix.Stat_t, rel string, op linkOp) error {
	if fdio.IsType(st, unix.S_IFREG) && st.Nlink > 1 && !linkAllowed(op) {
		return errMultipleLinks(rel)
	}
	return nil
}

func errMultipleLinks(rel string) *Error {
	return newErr(CodePermissionDenied, ReasonMultipleLinks, nil, "%q has more than one hard link", rel)
}
