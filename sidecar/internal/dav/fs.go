package dav

import (
	"context"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/webdav"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint"
	"github.com/agentworkspace/files/internal/davwire"
)

// NewFileSystem returns the webdav.FileSystem of f, over its namespaces:
// "/" (lists projects/ and global/), "/projects/" (read-only list of
// projects), "/projects/{project}/{path}", "/global/" (skills/ and AGENTS.md),
// "/global/skills/{path}", "/global/AGENTS.md".
//
// FileInfo values implement webdav.ETager (ETag == quoted revision) and
// webdav.ContentTyper (by extension, never sniffed). OpenFile for writing
// streams into a temp file and commits atomically on Close, checking the
// request's precondition (RequestState.Preconditions). Errors are *fs.PathError
// with Err == fs.ErrNotExist, fs.ErrPermission or fs.ErrExist (so os.Is*
// and x/net/webdav's 404/409 decisions work), or wrapping the davfs *Error
// for every other class, reachable with errors.As, so the caller can refine
// the status (412, 413, 507, 409); ErrorFromWebDAV covers both (see
// fs_errors.go).
//
// What it guarantees: every name is mapped to a Workspace and a relative
// path and handed to the davfs.FS methods, which do all validation and
// confinement; this layer never touches a host path. The virtual levels
// ("/", "/projects/", "/global/") are read-only: projects are created and
// deleted only through CreateProject/DeleteProject, and nothing but skills/
// and AGENTS.md exists under "/global/". Writes never edit a file in place:
// O_APPEND, or opening an existing file for writing without O_TRUNC, is
// refused with fs.ErrPermission, and a file is replaced only when its upload
// completed (Close) and the precondition still holds.
//
// What it does not do: x/net/webdav ignores If-Match/If-None-Match and does
// not map davfs reasons to 412/413/507; a thin wrapper handler (the
// sidecar's) builds one FileSystem per request with each written name's
// precondition (RequestState.Preconditions: If-Match, If: entity tags,
// lock pins, Required, Replacing) and an ErrorLog to recover the specific
// reason of every error, refuses unsafe names and cross-workspace MOVE/COPY before
// x/net/webdav acts (WebDAVWorkspace), and refines statuses. Dead
// properties are not stored (PROPPATCH answers 403 per property, except the
// Windows redirector's Win32 properties: 200, dropped). A file with more
// than one hard link is listed (its FileInfo's Sys() is its Entry, whose
// Reason says so) but never read; a server that must not offer it filters
// it from Readdir. x/net/webdav
// lets http.ServeContent sniff a GET's Content-Type; set it from
// ContentType first.
//
// The virtual directories' ETags: "/" has a constant ETag; "/projects/" and
// "/global/" carry a digest of their children's names and revisions, so they
// change exactly when a child is added, removed or changes revision.
// ck is the checkpoint store beside f (versions kept, automatic checkpoints
// of deletes); nil: checkpoints off.
func NewFileSystem(f *davfs.FS, ck *checkpoint.Store, st RequestState) webdav.FileSystem {
	return newFS(f, ck, st)
}

func newFS(f *davfs.FS, ck *checkpoint.Store, st RequestState) *davFS {
	d := &davFS{}
	d.init(f, ck, st)
	return d
}

// init makes d the FileSystem of f and the request state st (the handler's
// requests hold theirs in place).
func (d *davFS) init(f *davfs.FS, ck *checkpoint.Store, st RequestState) {
	*d = davFS{fs: f, ck: orDisabled(f, ck), st: st}
	if st.ListingReuse {
		d.listing = &listing{m: map[string]davfs.Entry{}}
	}
	if st.ForMutation {
		d.use = []davfs.Use{davfs.ForMutation}
	}
}

// orDisabled is ck, or, when nil, a store that has checkpoints off
// (CHECKPOINTS_DISABLED: keeping is off, deletes take no checkpoint).
func orDisabled(f *davfs.FS, ck *checkpoint.Store) *checkpoint.Store {
	if ck == nil {
		ck, _ = checkpoint.New(f, checkpoint.Config{}, checkpoint.Options{}) // no Dir: cannot fail
	}
	return ck
}

// RequestState is what one WebDAV request's FileSystem holds: what the
// handler decided before the library runs, and where the FileSystem
// records what the handler needs to know afterwards. The zero value is a
// request without preconditions that records nothing.
type RequestState struct {
	// Preconditions gives the precondition of each WebDAV name (cleaned:
	// "/a/b") a write touches (OpenFile/Close, RemoveAll, Rename), asked
	// right before the write starts and checked at commit time, under the
	// mutation lock. A request that writes several names (COPY, MOVE)
	// gets one answer per name. Nil: none.
	Preconditions func(name string) davfs.Precondition

	// ListingReuse lets the entries a directory listing (Readdir)
	// returned answer, for the rest of the request, the Stat and
	// read-only OpenFile of the same names. x/net/webdav answers a
	// PROPFIND Depth 1 by listing the directory and then stat-ing and
	// opening every member: without this each member is looked up three
	// times. For PROPFIND only: an entry may be as old as the listing
	// (content reads stay safe: a file is opened only if it still has the
	// listed revision).
	ListingReuse bool

	// ContentReads makes a read-only OpenFile of a regular file open it
	// at once (one confined open, and a small file read whole while
	// open), for a GET or HEAD that will read or seek it. Without it the
	// file is stat-ed and opened lazily, on the first Read or Seek:
	// x/net/webdav opens every member of a PROPFIND only to Stat it.
	ContentReads bool

	// ForMutation: the request changes something (DELETE, MOVE, COPY);
	// its looks at directories are not a client's read of their
	// revisions (davfs.ForMutation).
	ForMutation bool

	// Operator is who asked (the gateway's X-Operator, believed because
	// of its client certificate): the versions kept and the automatic
	// checkpoints the request takes record it. "": nobody named.
	Operator string

	// Quota answers the RFC 4331 quota properties of a PROPFIND that
	// asks for them (quota.go). Nil: never answered.
	Quota *Quota

	// Kept records what keeping did; AutoCheckpoints the automatic
	// checkpoints the request's deletes took; Errors every error the
	// FileSystem returned, with its davfs *Error. Nil: not recorded.
	Kept            *Unconditional
	AutoCheckpoints *AutoCheckpoints
	Errors          *ErrorLog
}

// davFS is the webdav.FileSystem of one request: every call goes through
// the davfs.FS's exported operations, with the request's state.
type davFS struct {
	fs      *davfs.FS
	ck      *checkpoint.Store // versions kept, automatic checkpoints of deletes
	st      RequestState
	listing *listing    // the request's listings, when ListingReuse
	use     []davfs.Use // [ForMutation] when the request mutates
}

var _ webdav.FileSystem = (*davFS)(nil)

// pre returns the precondition that applies to the cleaned WebDAV name,
// or the zero Precondition.
func (d *davFS) pre(name string) davfs.Precondition {
	if d.st.Preconditions != nil {
		return d.st.Preconditions(name)
	}
	return davfs.Precondition{}
}

// listing holds the entries the directory listings of one request
// returned, by WebDAV name.
type listing struct {
	mu sync.Mutex
	m  map[string]davfs.Entry
}

// entry stats a workspace name, from the request's listings when it can.
func (d *davFS) entry(ctx context.Context, t target) (davfs.Entry, error) {
	if l := d.listing; l != nil {
		l.mu.Lock()
		e, ok := l.m[t.name]
		l.mu.Unlock()
		if ok {
			return e, nil
		}
	}
	return d.fs.Stat(ctx, t.ws, t.path, d.use...)
}

// level says where in the WebDAV tree a name lies.
type level int

const (
	levelRoot       level = iota // "/"
	levelProjects                // "/projects"
	levelGlobalRoot              // "/global"
	levelWorkspace               // "/projects/{p}/..." or "/global/{skills|AGENTS.md}/..."
	levelNone                    // anything else under "/": does not exist
)

// Names of the fixed levels, and the two names "/global/" lists.
const (
	dirProjects  = "projects"
	dirGlobal    = "global"
	globalSkills = "skills"
	globalAgents = "AGENTS.md"
)

// target is a parsed WebDAV name.
type target struct {
	name  string // cleaned WebDAV name, "/" or "/a/b" (no trailing slash)
	level level
	ws    davfs.Workspace
	path  string // relative to the workspace root, "" for a project's root
}

// base is the name a FileInfo reports for t ("/" for "/").
func (t target) base() string { return path.Base(t.name) }

// isWorkspaceRoot reports whether t is a project's root directory (which
// only CreateProject/DeleteProject may create or remove).
func (t target) isWorkspaceRoot() bool {
	return t.level == levelWorkspace && t.path == ""
}

// cleanDavName turns a WebDAV name into "/" or "/a/b": a leading slash, no
// trailing slash, no empty segment. It deliberately does not resolve "."
// or "..": those segments are kept and refused by parse (and the core would
// refuse them too), so a name can never climb from one namespace into
// another by lexical cleaning.
func cleanDavName(name string) string {
	if isCleanName(name) {
		return name // what the handler hands the library: no copy
	}
	return "/" + strings.Join(strings.FieldsFunc(name, func(r rune) bool { return r == '/' }), "/")
}

// isCleanName reports whether name already is "/" or "/a/b".
func isCleanName(name string) bool {
	if name == "/" {
		return true
	}
	return len(name) > 1 && name[0] == '/' && name[len(name)-1] != '/' && !strings.Contains(name, "//")
}

// parse maps a WebDAV name to its level, workspace and relative path by
// the one WebDAV grammar (davwire.Locate). It refuses "." and ".."
// segments; every other check is the core's.
func parse(name string) (target, *davfs.Error) {
	clean := cleanDavName(name)
	t := target{name: clean}
	if clean == "/" {
		t.level = levelRoot
		return t, nil
	}
	var buf [32]string // on the stack: Locate keeps none of them
	segs := appendSegments(buf[:0], clean[1:])
	for _, s := range segs {
		if s == "." || s == ".." {
			return t, newErr(davfs.CodeInvalidArgument, davfs.ReasonInvalidPath, "path must not contain . or .. segments")
		}
	}
	pl := davwire.Locate(segs)
	switch {
	case pl.Scope == davwire.ScopeProject && pl.Project == "":
		t.level = levelProjects
	case pl.Scope == davwire.ScopeProject:
		t.level = levelWorkspace
		t.ws = davfs.Workspace{Scope: davfs.ScopeProject, Project: pl.Project}
		t.path = pl.RelPath
	case pl.Scope == davwire.ScopeGlobal && len(segs) == 1:
		t.level = levelGlobalRoot
	case pl.Scope == davwire.ScopeGlobal:
		// Every name under /global/ goes to the core, which alone decides
		// what is reachable (skills/**, AGENTS.md) and refuses the rest.
		t.level = levelWorkspace
		t.ws = davfs.Workspace{Scope: davfs.ScopeGlobal}
		t.path = pl.RelPath
	default:
		t.level = levelNone
	}
	return t, nil
}

// appendSegments appends the "/"-separated segments of p to segs
// (strings.Split without its allocation when segs has room).
func appendSegments(segs []string, p string) []string {
	for {
		s, rest, more := strings.Cut(p, "/")
		segs = append(segs, s)
		if !more {
			return segs
		}
		p = rest
	}
}

// parse is the package parse of a FileSystem call: its refusal is the
// call's error.
func (d *davFS) parse(op, name string) (target, error) {
	t, e := parse(name)
	if e != nil {
		return t, d.wrapErr(op, t.name, e)
	}
	return t, nil
}

// splitPath returns the parent directory and the last segment of a
// relative path ("" parent for a single segment).
func splitPath(p string) (dir, name string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}

// Mkdir creates a directory inside a workspace. The virtual levels and
// project roots are read-only (fs.ErrPermission); a missing parent is
// fs.ErrNotExist (409), an existing name fs.ErrExist (405).
func (d *davFS) Mkdir(ctx context.Context, name string, perm os.FileMode) error {
	const op = "mkdir"
	t, err := d.parse(op, name)
	if err != nil {
		return err
	}
	switch {
	case t.isWorkspaceRoot():
		if _, err := d.fs.Stat(ctx, t.ws, "", d.use...); err == nil {
			return d.wrapErr(op, t.name, errAlreadyExists()) // 405, RFC 4918 §9.3.1
		}
		return d.readOnlyErr(op, t.name, "projects are created only through CreateProject")
	case t.level == levelNone:
		return d.readOnlyErr(op, t.name, "only projects/ and global/ exist at the top level")
	case t.level != levelWorkspace:
		return d.wrapErr(op, t.name, errAlreadyExists())
	}
	if pre := d.pre(t.name); pre.IfMatch != "" {
		// There is no current representation to match (RFC 9110 §13.1.1).
		return d.wrapErr(op, t.name, errRevisionMismatch())
	}
	parent, base := splitPath(t.path)
	_, err = d.fs.CreateEntry(ctx, t.ws, parent, base, davfs.TypeDirectory, d.use...)
	return d.wrapErr(op, t.name, err)
}

// RemoveAll deletes a file or a directory tree inside a workspace. The
// expected revision is the precondition's If-Match when set, else the
// current revision (an unconditional delete).
func (d *davFS) RemoveAll(ctx context.Context, name string) error {
	const op = "removeall"
	t, err := d.parse(op, name)
	if err != nil {
		return err
	}
	if t.level != levelWorkspace || t.isWorkspaceRoot() {
		if t.level == levelNone {
			return d.wrapErr(op, t.name, errNotFound())
		}
		return d.readOnlyErr(op, t.name, "this directory cannot be deleted here")
	}
	// Taken before the revision can be handed out for a keep: the version
	// is captured after it, so the delete refuses whatever changed since.
	start := time.Now()
	expected, release, err := d.expectedRevision(ctx, op, t)
	if err != nil {
		return err
	}
	// The version kept (if any) is held until the delete has finished.
	defer release()
	// A removal that makes room for a COPY or MOVE destination never takes
	// a file with more than one hard link: the core's delete checks that on
	// an fd under the mutation lock.
	pre := d.pre(t.name)
	opts := checkpoint.DeleteOptions{Delete: davfs.DeleteOptions{Recursive: true, Replace: pre.Replacing}, Operator: d.st.Operator}
	if pre.Required && pre.Keep != "" && pre.IfMatch == "" {
		opts.Delete.ChangedAfter = start // expectedRevision kept a version (keepBefore)
	}
	if id := d.st.Kept.of(t.name); id != "" {
		// The version just kept is the automatic checkpoint of this delete.
		opts.Version = id
	} else if !opts.Delete.ChangedAfter.IsZero() && d.st.Kept.keptEmpty(t.name) {
		// Only empty directories, which nothing needs to keep; any
		// other name the delete finds (one that appeared after the
		// capture) refuses it, whatever its ctime.
		opts.SkipCheckpoint = true
		opts.Delete.KeptDirsOnly = true
	}
	auto, err := d.ck.DeleteEntry(ctx, t.ws, t.path, expected, opts)
	if id := auto; id != "" && id != d.st.Kept.of(t.name) {
		// Kept with the error too: a delete that failed after its
		// checkpoint still leaves that checkpoint in the store.
		d.st.AutoCheckpoints.add(id)
	}
	return d.wrapErr(op, t.name, err)
}

// AutoCheckpoints records the automatic checkpoints a WebDAV request's
// deletes took (a recursive DELETE, or the removal of a COPY or MOVE
// destination directory), so that the sidecar can name them to the
// gateway, which audits them. A per-file version kept for an unconditional
// write is reported by Unconditional instead.
type AutoCheckpoints struct {
	mu  sync.Mutex
	ids []string
}

func (a *AutoCheckpoints) add(id string) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ids = append(a.ids, id)
}

// IDs are the automatic checkpoints taken so far, in order.
func (a *AutoCheckpoints) IDs() []string {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.ids...)
}

// Rename moves an entry within one workspace. Moves across projects or
// between a project and Global, and moves of project roots or virtual
// directories, are fs.ErrPermission.
func (d *davFS) Rename(ctx context.Context, oldName, newName string) error {
	const op = "rename"
	src, dst, err := d.checkMove(op, oldName, newName)
	if err != nil {
		return err
	}
	expected, release, err := d.expectedRevision(ctx, op, src)
	if err != nil {
		return err
	}
	defer release() // a Rename keeps nothing: a no-op
	_, err = d.fs.MoveEntry(ctx, src.ws, src.path, dst.path, expected, d.use...)
	return d.wrapErr(op, src.name, err)
}

// checkMove is Rename's refusal, without touching the disk, of a move
// that cannot be allowed at all: both names must be in one workspace,
// neither a virtual directory nor a project root. A handler must refuse
// such a move before x/net/webdav's MOVE (WebDAVWorkspace names each
// name's workspace): with "Overwrite: T" x/net deletes an existing
// destination (RemoveAll) before it calls Rename, so a move refused only
// by Rename would still have lost the destination.
func (d *davFS) checkMove(op, oldName, newName string) (src, dst target, err error) {
	if src, err = d.parse(op, oldName); err != nil {
		return src, dst, err
	}
	if dst, err = d.parse(op, newName); err != nil {
		return src, dst, err
	}
	if src.level != levelWorkspace || src.isWorkspaceRoot() {
		if src.level == levelNone {
			return src, dst, d.wrapErr(op, src.name, errNotFound())
		}
		return src, dst, d.readOnlyErr(op, src.name, "this directory cannot be moved")
	}
	if dst.level != levelWorkspace || dst.isWorkspaceRoot() || dst.ws != src.ws {
		return src, dst, d.readOnlyErr(op, src.name, "entries can only be moved within one workspace")
	}
	return src, dst, nil
}

// expectedRevision is the revision a RemoveAll or Rename of t must see at
// commit: If-Match when given, else the current one (refused when the
// precondition is Required). If-None-Match: * on an existing target can
// never hold; a Replacing removal never takes a file with several links.
// release ends the hold on a version keepBefore kept: the caller defers it
// past its delete (a no-op when nothing was kept).
func (d *davFS) expectedRevision(ctx context.Context, op string, t target) (rev string, release func(), err error) {
	pre := d.pre(t.name)
	if pre.IfMatch != "" && !pre.Replacing {
		return pre.IfMatch, noRelease, nil
	}
	e, err := d.fs.Stat(ctx, t.ws, t.path, d.use...)
	if err != nil {
		return "", noRelease, d.wrapErr(op, t.name, err)
	}
	switch {
	case pre.IfNoneMatch:
		return "", noRelease, d.wrapErr(op, t.name, errRevisionMismatch())
	case pre.Replacing && e.Reason == davfs.NotEditableMultipleLinks:
		return "", noRelease, d.wrapErr(op, t.name, errMultipleLinks(t.path))
	case pre.IfMatch != "":
		return pre.IfMatch, noRelease, nil
	case pre.Required && pre.Keep == "":
		return "", noRelease, d.wrapErr(op, t.name, errPreconditionRequired())
	case pre.Required:
		return d.keepBefore(ctx, op, t, e)
	}
	// No precondition from the client (allowed unconditional writes): the
	// revision just read is the one acted on, so it is recorded as read
	// now even under ForMutation; otherwise a recursive delete would judge
	// the tree by the directory's ctime and refuse work it was asked to
	// delete.
	d.fs.HandOut(e, time.Now())
	return e.Revision, noRelease, nil
}

// Stat returns the FileInfo of a name; it implements webdav.ETager and
// webdav.ContentTyper.
func (d *davFS) Stat(ctx context.Context, name string) (os.FileInfo, error) {
	const op = "stat"
	t, err := d.parse(op, name)
	if err != nil {
		return nil, err
	}
	fi, err := d.stat(ctx, op, t)
	if err != nil {
		return nil, err
	}
	return fi, nil
}

func (d *davFS) stat(ctx context.Context, op string, t target) (*davInfo, error) {
	switch t.level {
	case levelRoot:
		return virtualInfo("/", time.Unix(0, 0).UTC(), rootRevision), nil
	case levelProjects, levelGlobalRoot:
		children, err := d.children(ctx, op, t)
		if err != nil {
			return nil, err
		}
		return virtualDirInfo(t.base(), children), nil // dirProjects, dirGlobal
	case levelWorkspace:
		e, err := d.entry(ctx, t)
		if err != nil {
			return nil, d.wrapErr(op, t.name, err)
		}
		return entryInfo(t.base(), e), nil
	}
	return nil, d.wrapErr(op, t.name, errNotFound())
}

// children returns the FileInfos of the virtual directory t: "/projects"
// (listProjects) or "/global" (globalChildren).
func (d *davFS) children(ctx context.Context, op string, t target) ([]*davInfo, error) {
	if t.level == levelProjects {
		return d.listProjects(ctx, op, t.name)
	}
	return d.globalChildren(ctx, op, t.name)
}

// listProjects returns the FileInfos of every project, following the
// cursor to the end.
func (d *davFS) listProjects(ctx context.Context, op, name string) ([]*davInfo, error) {
	var all []*davInfo
	cursor := ""
	for {
		page, err := d.fs.ListProjects(ctx, maxProjectsPage, cursor)
		if err != nil {
			return nil, d.wrapErr(op, name, err)
		}
		for _, p := range page.Projects {
			all = append(all, virtualInfo(p.Name, p.ModTime, p.Revision))
		}
		if page.NextCursor == "" || len(page.Projects) == 0 {
			return all, nil
		}
		cursor = page.NextCursor
	}
}

// maxProjectsPage is the page size for listing projects: the PRD's maximum,
// which the core accepts whatever maxPageSize is configured to (it only
// lowers it).
const maxProjectsPage = 500

// globalChildren returns the FileInfos of "/global/": skills/ and, when it
// exists, AGENTS.md. Nothing else under CODEX_HOME is ever asked for.
func (d *davFS) globalChildren(ctx context.Context, op, name string) ([]*davInfo, error) {
	ws := davfs.Workspace{Scope: davfs.ScopeGlobal}
	var out []*davInfo
	for _, n := range []string{globalSkills, globalAgents} {
		e, err := d.fs.Stat(ctx, ws, n, d.use...)
		if err != nil {
			if davfs.CodeOf(err) == davfs.CodeNotFound && n == globalAgents {
				continue
			}
			return nil, d.wrapErr(op, name, err)
		}
		out = append(out, entryInfo(n, e))
	}
	return out, nil
}

// OpenFile opens a name for reading (files and directories) or, with
// O_WRONLY/O_RDWR together with O_TRUNC or O_CREATE on a missing file, for
// an atomic replacing write that commits on Close. See WebDAV for the rules.
func (d *davFS) OpenFile(ctx context.Context, name string, flag int, perm os.FileMode) (webdav.File, error) {
	const op = "open"
	t, err := d.parse(op, name)
	if err != nil {
		return nil, err
	}
	access := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	wantsWrite := flag&(os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 || access == os.O_WRONLY
	if flag&os.O_APPEND != 0 {
		return nil, d.readOnlyErr(op, t.name, "appending is not supported; files are replaced whole")
	}
	if !wantsWrite {
		// O_RDONLY, or O_RDWR without O_CREATE/O_TRUNC (x/net/webdav's
		// PROPPATCH): a read handle whose Write fails.
		return d.openRead(ctx, op, t)
	}
	return d.openWrite(ctx, op, t, flag)
}

func (d *davFS) openRead(ctx context.Context, op string, t target) (webdav.File, error) {
	if t.level == levelWorkspace && d.st.ContentReads && t.path != "" {
		// Anything but a readable regular file (a directory, a multi-link
		// file, a missing name) takes the lazy path below, which answers
		// it as it always did.
		if r, e, err := d.fs.OpenReader(ctx, t.ws, t.path); err == nil {
			rf := &readFile{ctx: ctx, d: d, t: t, f: r, infoVal: davInfo{name: t.base(), e: e}}
			rf.info = &rf.infoVal // one allocation for the file and its FileInfo
			return rf, nil
		}
	}
	fi, err := d.stat(ctx, op, t) // the virtual levels are directories
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return &dirFile{ctx: ctx, d: d, t: t, info: fi}, nil
	}
	return &readFile{ctx: ctx, d: d, t: t, info: fi}, nil
}

func (d *davFS) openWrite(ctx context.Context, op string, t target, flag int) (webdav.File, error) {
	if t.level != levelWorkspace || t.isWorkspaceRoot() {
		if t.level == levelNone {
			return nil, d.readOnlyErr(op, t.name, "files can only be written inside a workspace")
		}
		return nil, d.readOnlyErr(op, t.name, "this directory is read-only")
	}
	pre := d.pre(t.name)
	if flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL {
		pre.IfNoneMatch = true // re-checked at commit
	}
	// Look before streaming, so that a bad path, a directory, a missing
	// parent or a failed If-None-Match is answered before any byte is read.
	// The commit re-checks everything under the mutation lock.
	e, err := d.fs.Stat(ctx, t.ws, t.path, d.use...)
	switch {
	case err == nil:
		if e.Type == davfs.TypeDirectory {
			return nil, d.wrapErr(op, t.name, newErr(davfs.CodeFailedPrecondition, davfs.ReasonNotAFile, "the target is a directory"))
		}
		if e.Type != davfs.TypeFile {
			return nil, d.wrapErr(op, t.name, newErr(davfs.CodeFailedPrecondition, davfs.ReasonNotRegular, "the target is not a regular file"))
		}
		if e.Reason == davfs.NotEditableMultipleLinks {
			// WriteStream refuses it too; say so before reading the body.
			return nil, d.wrapErr(op, t.name, errMultipleLinks(t.path))
		}
		if flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL {
			return nil, d.wrapErr(op, t.name, newErr(davfs.CodeAlreadyExists, davfs.ReasonAlreadyExists, "the target already exists"))
		}
		if flag&os.O_TRUNC == 0 {
			return nil, d.readOnlyErr(op, t.name, "files are replaced whole; partial writes are not supported")
		}
		if pre.IfNoneMatch || (pre.IfMatch != "" && pre.IfMatch != e.Revision) {
			return nil, d.wrapErr(op, t.name, errRevisionMismatch())
		}
		if pre.Required && pre.IfMatch == "" {
			if pre.Keep == "" {
				return nil, d.wrapErr(op, t.name, errPreconditionRequired())
			}
			// The upload commits only over the revision kept (If-Match).
			// The version is held until the upload has finished
			// (startUpload releases it).
			id, release, err := d.ck.KeepVersion(ctx, t.ws, t.path, e.Revision, pre.Keep, d.st.Operator)
			if err != nil {
				return nil, d.wrapErr(op, t.name, err)
			}
			d.st.Kept.note(t.name, id)
			pre.IfMatch = e.Revision
			return startUpload(ctx, d, t, pre, id, release), nil
		}
	case davfs.CodeOf(err) == davfs.CodeNotFound:
		if flag&os.O_CREATE == 0 {
			return nil, d.wrapErr(op, t.name, err)
		}
		if pre.IfMatch != "" {
			return nil, d.wrapErr(op, t.name, errRevisionMismatch())
		}
		if pre.Required {
			pre.IfNoneMatch = true // a create: it must stay one until commit
		}
		parent, _ := splitPath(t.path)
		pe, perr := d.fs.Stat(ctx, t.ws, parent, d.use...)
		if perr != nil {
			return nil, d.wrapErr(op, t.name, perr)
		}
		if pe.Type != davfs.TypeDirectory {
			// os.OpenFile says ENOTDIR; x/net/webdav answers 409 only
			// for "not exist", which is what a client needs to hear.
			return nil, d.wrapErr(op, t.name, newErr(davfs.CodeNotFound, davfs.ReasonNotADirectory, "the parent is not a directory"))
		}
	default:
		return nil, d.wrapErr(op, t.name, err)
	}
	return startUpload(ctx, d, t, pre, "", noRelease), nil
}

// WebDAVWorkspace maps a WebDAV name of the NewFileSystem FileSystem to the
// Workspace and relative path its operations use. ok is false for the
// virtual levels ("/", "/projects", "/global") and for names outside the
// tree, and for "." or ".." segments. It checks nothing else: the FS
// methods the caller hands ws and rel to do all validation and
// confinement, as they do for the FileSystem itself.
func WebDAVWorkspace(name string) (ws davfs.Workspace, rel string, ok bool) {
	t, err := parse(name)
	if err != nil || t.level != levelWorkspace {
		return davfs.Workspace{}, "", false
	}
	return t.ws, t.path, true
}
