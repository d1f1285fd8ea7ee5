package dav

import (
	"github.com/agentworkspace/files/davfs"

	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"path"
	"strings"
	"time"
)

// davInfo is the os.FileInfo of the WebDAV view. It implements
// webdav.ETager (the strong, quoted revision) and webdav.ContentTyper (by
// extension only: content is never read to guess a type).
type davInfo struct {
	name    string
	e       davfs.Entry // of a workspace name; for the virtual levels only Type, ModTime and Revision
	virtual bool
}

func (i *davInfo) Name() string { return i.name }
func (i *davInfo) Size() int64  { return i.e.Size }
func (i *davInfo) IsDir() bool  { return i.e.Type == davfs.TypeDirectory }

// Sys returns the davfs Entry of a name inside a workspace (so a handler
// can see, for example, that a file has several hard links), nil for the
// virtual levels.
func (i *davInfo) Sys() any {
	if i.virtual {
		return nil
	}
	return i.e
}

// Mode reports 0755 for directories and 0644 for files: the modes davfs
// creates. The real mode is kept by writes but not exposed.
func (i *davInfo) Mode() fs.FileMode {
	if i.IsDir() {
		return fs.ModeDir | 0o755
	}
	return 0o644
}

func (i *davInfo) ModTime() time.Time { return i.e.ModTime }

// Revisioner is every os.FileInfo of the WebDAV view: Revision is the
// davfs revision (the ETag without quotes).
type Revisioner interface{ Revision() string }

var _ Revisioner = (*davInfo)(nil)

func (i *davInfo) Revision() string { return i.e.Revision }

// ETag implements webdav.ETager: the revision as a strong entity tag, so the
// WebDAV ETag equals the gRPC/REST revision.
func (i *davInfo) ETag(ctx context.Context) (string, error) {
	return `"` + i.e.Revision + `"`, nil
}

// ContentType implements webdav.ContentTyper.
func (i *davInfo) ContentType(ctx context.Context) (string, error) {
	if i.IsDir() {
		return "httpd/unix-directory", nil
	}
	return ContentType(i.name), nil
}

// textType returns the type of extensions served as text whatever the
// host's mime.types says, so the answer does not depend on the machine.
func textType(ext string) (string, bool) {
	switch ext {
	case ".md", ".markdown":
		return "text/markdown; charset=utf-8", true
	case ".json":
		return "application/json", true
	case ".csv":
		return "text/csv; charset=utf-8", true
	case ".txt", ".log", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf",
		".go", ".mod", ".sum", ".py", ".ts", ".tsx", ".jsx", ".rs", ".sh",
		".c", ".h", ".cc", ".cpp", ".java", ".rb", ".sql", ".diff", ".patch":
		return "text/plain; charset=utf-8", true
	}
	return "", false
}

// ContentType returns the media type of a file name from its extension only
// (never by sniffing content): a fixed table of common text types first,
// then mime.TypeByExtension, else application/octet-stream. The sidecar
// should use it for GET too (x/net/webdav lets http.ServeContent sniff when
// no Content-Type is set) together with X-Content-Type-Options: nosniff.
func ContentType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if ext == "" {
		return "application/octet-stream"
	}
	if t, ok := textType(ext); ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}

func entryInfo(name string, e davfs.Entry) *davInfo { return &davInfo{name: name, e: e} }

// virtualInfo describes a directory no davfs Entry stands for.
func virtualInfo(name string, modTime time.Time, revision string) *davInfo {
	return &davInfo{name: name, e: davfs.Entry{Type: davfs.TypeDirectory, ModTime: modTime, Revision: revision}, virtual: true}
}

// rootRevision is the constant revision of "/": its children (projects/ and
// global/) never change.
const rootRevision = "davfs-root-v1"

// virtualDirInfo describes a virtual directory. Its revision is a digest of
// its children's names and revisions ("v-" + 32 hex digits), its ModTime the
// newest child's (the Unix epoch when empty).
func virtualDirInfo(name string, children []*davInfo) *davInfo {
	h := sha256.New()
	h.Write([]byte(name))
	mod := time.Unix(0, 0).UTC()
	for _, c := range children {
		h.Write([]byte{0})
		h.Write([]byte(c.name))
		h.Write([]byte{0})
		h.Write([]byte(c.e.Revision))
		if c.e.ModTime.After(mod) {
			mod = c.e.ModTime
		}
	}
	return virtualInfo(name, mod, "v-"+hex.EncodeToString(h.Sum(nil)[:16]))
}
