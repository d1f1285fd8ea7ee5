package dav_test

// Adversarial layouts run against every operation (issue 2, "Tests that
// must exist"): one shared table of filesystem layouts in the style of Go's
// os.Root root_test.go, each row naming a path that davfs must refuse (or
// may only serve without leaking), and every davfs operation plus the
// webdav.FileSystem methods run against it. Each run asserts the error code
// and reason AND that nothing outside the target changed: the whole tree
// (projects, CODEX_HOME, the outside canaries) is snapshotted before and
// after (type, mode, size, sha256, link target).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/sectree"
	"github.com/agentworkspace/files/sidecar/internal/dav"
	"golang.org/x/net/webdav"
	"golang.org/x/sys/unix"
)

// secWant is an acceptable outcome: success (ok) and/or a *davfs.Error with
// one of codes and one of reasons (any reason when reasons is empty).
type secWant struct {
	ok      bool
	codes   []davfs.Code
	reasons []davfs.Reason
}

func secDeny(reasons ...davfs.Reason) secWant {
	return secWant{codes: []davfs.Code{davfs.CodePermissionDenied}, reasons: reasons}
}

func (w secWant) or(o secWant) secWant {
	r := secWant{
		ok:      w.ok || o.ok,
		codes:   append(append([]davfs.Code(nil), w.codes...), o.codes...),
		reasons: append(append([]davfs.Reason(nil), w.reasons...), o.reasons...),
	}
	if (len(w.codes) > 0 && len(w.reasons) == 0) || (len(o.codes) > 0 && len(o.reasons) == 0) {
		r.reasons = nil // one side accepts any reason for its codes
	}
	return r
}

var (
	secWantSymlink          = secDeny(davfs.ReasonSymlink)
	secWantDenied           = secDeny(davfs.ReasonDenylisted)
	secWantOutside          = secDeny(davfs.ReasonOutsideGlobal)
	secWantInvalid          = secWant{codes: []davfs.Code{davfs.CodeInvalidArgument}, reasons: []davfs.Reason{davfs.ReasonInvalidPath, davfs.ReasonInvalidName}}
	secWantExists           = secWant{codes: []davfs.Code{davfs.CodeAlreadyExists}, reasons: []davfs.Reason{davfs.ReasonAlreadyExists}}
	secWantNotDir           = secWant{codes: []davfs.Code{davfs.CodeFailedPrecondition}, reasons: []davfs.Reason{davfs.ReasonNotADirectory}}
	secWantMultiple         = secWant{codes: []davfs.Code{davfs.CodePermissionDenied, davfs.CodeFailedPrecondition}, reasons: []davfs.Reason{davfs.ReasonMultipleLinks}}
	secWantNotReg           = secWant{codes: []davfs.Code{davfs.CodeFailedPrecondition, davfs.CodePermissionDenied}, reasons: []davfs.Reason{davfs.ReasonNotRegular, davfs.ReasonNotAFile}}
	secWantNoProj           = secWant{codes: []davfs.Code{davfs.CodeNotFound}, reasons: []davfs.Reason{davfs.ReasonProjectNotFound}}
	secWantAny              = secWant{ok: true}
	secWantOutsideOrInvalid = secWantOutside.or(secWantInvalid)
)

// secRow is one adversarial layout. path is the path under test inside ws.
// want applies to every operation unless over names the operation.
// finalExists: the last segment exists on disk, so "create/move onto it"
// may also answer AlreadyExists.
type secRow struct {
	name        string
	layout      []string
	ws          davfs.Workspace
	path        string
	want        secWant
	over        map[string]secWant
	finalExists bool
	// davWant, when set, replaces want for the webdav.FileSystem methods:
	// x/net/webdav hands its FileSystem cleaned names, so "/projects/p/../q"
	// legitimately means project q there. noDav skips them for rows whose
	// cleaned name is a legitimate path.
	davWant *secWant
	noDav   bool
}

// secOpsOnFile are overrides for a path whose last segment is a regular
// (refused-for-content) file: listing it is NOT_A_DIRECTORY.
func secFileOver(content secWant, extra map[string]secWant) map[string]secWant {
	m := map[string]secWant{
		"ListEntries":    secWantNotDir,
		"ReadDir":        secWantNotDir,
		"CreateIn":       secWantNotDir.or(secWant{codes: []davfs.Code{davfs.CodeNotFound}}),
		"CreateAt":       secWantExists,
		"CreateDirAt":    secWantExists,
		"MoveDst":        secWantExists,
		"ReadFile":       content,
		"OpenRead":       content,
		"UpdateFile":     content,
		"WriteStream":    content,
		"WebDAV.Read":    content,
		"WebDAV.Write":   content,
		"WebDAV.Mkdir":   secWantExists,
		"WebDAV.RenameD": secWantExists,
		"WebDAV.Readdir": secWantNotDir,
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func secRows() []secRow {
	P := sectree.Project("p")
	G := sectree.Global
	hard := secFileOver(secWantMultiple, map[string]secWant{
		// Stat, list, delete and move only touch the project's own name.
		"Stat":           secWantAny,
		"WebDAV.Stat":    secWantAny,
		"DeleteEntry":    secWantAny.or(secWantMultiple),
		"MoveSrc":        secWantAny.or(secWantMultiple),
		"WebDAV.Remove":  secWantAny.or(secWantMultiple),
		"WebDAV.RenameS": secWantAny.or(secWantMultiple),
		// Metadata-only read (editable=false, no content) is fine too.
		"ReadFile": secWantAny.or(secWantMultiple),
	})
	fifo := secFileOver(secWantNotReg, map[string]secWant{
		"Stat":           secWantAny.or(secWantNotReg),
		"WebDAV.Stat":    secWantAny.or(secWantNotReg),
		"DeleteEntry":    secWantAny.or(secWantNotReg),
		"MoveSrc":        secWantAny.or(secWantNotReg),
		"WebDAV.Remove":  secWantAny.or(secWantNotReg),
		"WebDAV.RenameS": secWantAny.or(secWantNotReg),
		"ListEntries":    secWantNotDir.or(secWantNotReg),
		"ReadDir":        secWantNotDir.or(secWantNotReg),
		"WebDAV.Readdir": secWantNotDir.or(secWantNotReg),
		"CreateIn":       secWantNotDir.or(secWantNotReg).or(secWant{codes: []davfs.Code{davfs.CodeNotFound}}),
	})
	return []secRow{
		// Symlinks: never followed, never operated on (PRD 8.3).
		{name: "symlink to outside file", layout: []string{"projects/p/link => ../../outside/canary.txt"}, ws: P, path: "link", want: secWantSymlink, finalExists: true},
		{name: "absolute symlink to outside file", layout: []string{"projects/p/abs => /outside/canary.txt"}, ws: P, path: "abs", want: secWantSymlink, finalExists: true},
		{name: "symlink to outside dir, through", layout: []string{"projects/p/out => ../../outside/dir"}, ws: P, path: "out/canary.txt", want: secWantSymlink},
		{name: "symlink to outside dir, itself", layout: []string{"projects/p/out => ../../outside/dir"}, ws: P, path: "out", want: secWantSymlink, finalExists: true},
		{name: "symlink to outside dir, new name below", layout: []string{"projects/p/out => ../../outside/dir"}, ws: P, path: "out/new.txt", want: secWantSymlink},
		{name: "symlink to sibling project", layout: []string{"projects/p/sib => ../q"}, ws: P, path: "sib/secret.txt", want: secWantSymlink},
		{name: "symlink to projects root", layout: []string{"projects/p/root => .."}, ws: P, path: "root/q/secret.txt", want: secWantSymlink},
		{name: "symlinked intermediate directory", layout: []string{"projects/p/real/", "projects/p/real/inner.txt", "projects/p/alias => real"}, ws: P, path: "alias/inner.txt", want: secWantSymlink},
		{name: "symlink deep in the path", layout: []string{"projects/p/a/b/", "projects/p/a/b/c => ../../../../outside/dir"}, ws: P, path: "a/b/c/canary.txt", want: secWantSymlink},
		{name: "symlink inside the root to a file", layout: []string{"projects/p/ok-link => ok.txt"}, ws: P, path: "ok-link", want: secWantSymlink, finalExists: true},
		{name: "dangling symlink", layout: []string{"projects/p/dangle => ../../outside/nothing-here"}, ws: P, path: "dangle", want: secWantSymlink, finalExists: true},
		{name: "project that is a symlink", layout: []string{"projects/evil => ../outside/dir"}, ws: sectree.Project("evil"), path: "canary.txt", want: secWantNoProj.or(secWantSymlink)},
		{name: "project that is a symlink, root", layout: []string{"projects/evil => ../outside/dir"}, ws: sectree.Project("evil"), path: "", want: secWantNoProj.or(secWantSymlink).or(secWantInvalid)},

		// Denylisted names at any depth (PRD 8.2); .git is forced in.
		{name: "denylisted .git file", layout: []string{"projects/p/.git/", "projects/p/.git/config"}, ws: P, path: ".git/config", want: secWantDenied},
		{name: "denylisted .git itself", layout: []string{"projects/p/.git/", "projects/p/.git/HEAD"}, ws: P, path: ".git", want: secWantDenied},
		{name: "denylisted node_modules/x", layout: []string{"projects/p/node_modules/x/", "projects/p/node_modules/x/index.js"}, ws: P, path: "node_modules/x", want: secWantDenied},
		{name: "denylisted a/b/vendor/c", layout: []string{"projects/p/a/b/vendor/c/", "projects/p/a/b/vendor/c/lib.go"}, ws: P, path: "a/b/vendor/c", want: secWantDenied},
		{name: "denylisted name that does not exist", ws: P, path: "okdir/.git", want: secWantDenied},
		{name: "denylisted in global skills", layout: []string{"codex/skills/node_modules/", "codex/skills/node_modules/m.js"}, ws: G, path: "skills/node_modules/m.js", want: secWantDenied},

		// CODEX_HOME secrets beside skills/ (PRD 5.4).
		{name: "global auth.json", ws: G, path: "auth.json", want: secWantOutside},
		{name: "global config.toml", ws: G, path: "config.toml", want: secWantOutside},
		{name: "global sessions file", layout: []string{"codex/sessions/", "codex/sessions/s1.jsonl"}, ws: G, path: "sessions/s1.jsonl", want: secWantOutside},
		{name: "global sessions dir", layout: []string{"codex/sessions/", "codex/sessions/s1.jsonl"}, ws: G, path: "sessions", want: secWantOutside},
		{name: "global new root name", ws: G, path: "new.md", want: secWantOutside},
		{name: "global skills symlink to auth.json", layout: []string{"codex/skills/leak => ../auth.json"}, ws: G, path: "skills/leak", want: secWantSymlink, finalExists: true},
		{name: "global skills symlink to CODEX_HOME", layout: []string{"codex/skills/up => .."}, ws: G, path: "skills/up/auth.json", want: secWantSymlink},
		{name: "global case variant Skills/", layout: []string{"codex/Skills/", "codex/Skills/x.md"}, ws: G, path: "Skills/x.md", want: secWantOutside},
		{name: "global case variant AGENTS.MD", layout: []string{"codex/AGENTS.MD"}, ws: G, path: "AGENTS.MD", want: secWantOutside},
		{name: "global case variant agents.md (missing)", ws: G, path: "agents.md", want: secWantOutside},
		// AGENTS.md replaced by a link to a secret: Global's own rules
		// (PROTECTED, OUTSIDE_GLOBAL) may answer before the link check;
		// any refusal will do, as long as nothing is served or changed.
		{name: "global AGENTS.md symlink to auth.json", layout: []string{"-codex/AGENTS.md", "codex/AGENTS.md => auth.json"}, ws: G, path: "AGENTS.md", want: secWantRefused, finalExists: true},
		{name: "global AGENTS.md hard link to auth.json", layout: []string{"-codex/AGENTS.md", "codex/AGENTS.md == codex/auth.json"}, ws: G, path: "AGENTS.md", over: secMerge(hard, map[string]secWant{
			"MoveSrc":        secWantRefused,
			"WebDAV.RenameS": secWantRefused,
			"MoveDst":        secWantRefused,
			"WebDAV.RenameD": secWantRefused,
			"ListEntries":    secWantRefused,
			"ReadDir":        secWantRefused,
			"WebDAV.Readdir": secWantRefused,
			"CreateIn":       secWantRefused,
			"CreateAt":       secWantRefused,
			"CreateDirAt":    secWantRefused,
			"WebDAV.Mkdir":   secWantRefused,
		}), finalExists: true},
		{name: "global AGENTS.md is a directory", layout: []string{"-codex/AGENTS.md", "codex/AGENTS.md/x.md"}, ws: G, path: "AGENTS.md/x.md", want: secWant{codes: []davfs.Code{davfs.CodePermissionDenied, davfs.CodeNotFound, davfs.CodeFailedPrecondition}}},
		{name: "hard link in project to auth.json", layout: []string{"projects/p/h.json == codex/auth.json"}, ws: P, path: "h.json", over: hard, finalExists: true},
		{name: "hard link in skills to auth.json", layout: []string{"codex/skills/h.json == codex/auth.json"}, ws: G, path: "skills/h.json", over: hard, finalExists: true},
		{name: "hard link in project to outside canary", layout: []string{"projects/p/okdir/h.txt == outside/canary.txt"}, ws: P, path: "okdir/h.txt", over: hard, finalExists: true},

		// Syntax: never resolved at all.
		{name: "dot-dot to sibling", ws: P, path: "../q/secret.txt", want: secWantInvalid, noDav: true},
		{name: "dot-dot after a dir", ws: P, path: "okdir/../../q/secret.txt", want: secWantInvalid, noDav: true},
		{name: "global dot-dot", ws: G, path: "skills/../auth.json", want: secWantInvalid, davWant: &secWantOutsideOrInvalid},
		{name: "absolute path", ws: P, path: "/ok.txt", want: secWantInvalid, noDav: true},

		// Mount points inside a project (RESOLVE_NO_XDEV): never crossed.
		{name: "tmpfs mounted in the project", layout: []string{"projects/p/mnt @tmpfs", "projects/p/mnt/secret-mnt.txt"}, ws: P, path: "mnt/secret-mnt.txt", want: secDeny()},
		{name: "tmpfs mount point itself", layout: []string{"projects/p/mnt @tmpfs", "projects/p/mnt/secret-mnt.txt"}, ws: P, path: "mnt", want: secDeny().or(secWant{codes: []davfs.Code{davfs.CodeFailedPrecondition}}), finalExists: true},
		// A bind mount from the same file system has the parent's st_dev:
		// only a mount-id check (openat2 RESOLVE_NO_XDEV, or statx
		// STATX_MNT_ID / STATX_ATTR_MOUNT_ROOT per segment in the fallback
		// walk) sees it.
		{name: "bind mount of an outside dir", layout: []string{"projects/p/bind @ outside/dir"}, ws: P, path: "bind/canary.txt", want: secDeny()},

		// A legitimate directory holding traps: any outcome is acceptable,
		// but a recursive delete or a move must never follow the links
		// (the canaries and the tree outside "tree" must stay intact).
		{name: "directory holding links to outside", layout: []string{
			"projects/p/tree/a.txt", "projects/p/tree/sub/b.txt",
			"projects/p/tree/sub/escape => ../../../../outside/dir",
			"projects/p/tree/sub/abs => /outside",
			"projects/p/tree/sub/sib => ../../../q",
			"projects/p/tree/h.json == codex/auth.json",
			"projects/p/tree/node_modules/m.js",
			"projects/p/tree/.git/config",
			"projects/p/tree/pipe |",
		}, ws: P, path: "tree", want: secWantAny},
		{name: "skills directory holding links to CODEX_HOME", layout: []string{
			"codex/skills/tree/a.md",
			"codex/skills/tree/up => ../..",
			"codex/skills/tree/auth => ../../auth.json",
			"codex/skills/tree/h.json == codex/auth.json",
		}, ws: G, path: "skills/tree", want: secWantAny},

		// Roots and protected Global names (PRD 5.4, 7.9, 7.10): anything
		// goes except removing or renaming them.
		{name: "project root", ws: P, path: "", want: secWantAny, over: secProtected(secWantRootRefused)},
		{name: "global root", ws: G, path: "", want: secWantAny, over: secProtected(secWantRootRefused)},
		{name: "global skills root", ws: G, path: "skills", want: secWantAny, over: secProtected(secDeny(davfs.ReasonProtected))},
		{name: "global AGENTS.md", ws: G, path: "AGENTS.md", want: secWantAny, over: map[string]secWant{
			"MoveSrc": secDeny(davfs.ReasonProtected), "WebDAV.RenameS": secDeny(davfs.ReasonProtected),
			"MoveDst": secDeny(davfs.ReasonProtected).or(secWantExists), "WebDAV.RenameD": secDeny(davfs.ReasonProtected).or(secWantExists),
		}},

		// Odd but legal names, and one no API path can address.
		{name: "odd names", layout: []string{"projects/p/weird/new\nline.txt", "projects/p/weird/back\\slash.txt", "projects/p/weird/sp ace.txt", "projects/p/weird/bad\xff.txt"}, ws: P, path: "weird/bad\xff.txt", want: secWantInvalid},

		// FIFOs are never opened for content: no request may hang.
		{name: "fifo", layout: []string{"projects/p/pipe |"}, ws: P, path: "pipe", over: fifo, finalExists: true},
	}
}

// secWantRefused: any refusal (the security property is checked by the
// content and tree assertions).
var secWantRefused = secWant{codes: []davfs.Code{davfs.CodePermissionDenied, davfs.CodeFailedPrecondition, davfs.CodeAlreadyExists, davfs.CodeNotFound}}

// secWantRootRefused: a workspace root cannot be moved or deleted.
var secWantRootRefused = secWant{codes: []davfs.Code{davfs.CodePermissionDenied, davfs.CodeInvalidArgument, davfs.CodeFailedPrecondition}}

// secProtected makes the delete and rename operations require w.
func secProtected(w secWant) map[string]secWant {
	return map[string]secWant{"MoveSrc": w, "DeleteEntry": w, "WebDAV.Remove": w, "WebDAV.RenameS": w}
}

// secOpResult is what one operation did.
type secOpResult struct {
	err      error
	contents [][]byte // bytes returned to the caller
	touched  []string // ws paths a permitted success may change besides the target
	names    []string // names a listing returned
}

// secOp is one operation run against a row's path.
type secOp struct {
	name   string
	webdav bool
	run    func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult
}

func secSplit(p string) (dir, name string) {
	dir, name = path.Split(p)
	if dir != "/" { // keep an absolute path absolute
		dir = strings.TrimSuffix(dir, "/")
	}
	return dir, name
}

// secValid returns an existing regular file and a free name in ws.
func secValid(ws davfs.Workspace) (src, free string) {
	if ws.Scope == davfs.ScopeGlobal {
		return "skills/ok.md", "skills/moved.md"
	}
	return "ok.txt", "moved.txt"
}

// secDavName maps a workspace path to its webdav.FileSystem name.
func secDavName(ws davfs.Workspace, p string) string {
	if ws.Scope == davfs.ScopeGlobal {
		return "/global/" + p
	}
	return "/projects/" + ws.Project + "/" + p
}

func secOps() []secOp {
	return []secOp{
		{name: "ListEntries", run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			var r secOpResult
			r.err = sectree.Try(func() error {
				pg, err := e.FS.ListEntries(ctx, ws, p, 0, "")
				for _, en := range pg.Entries {
					r.names = append(r.names, en.Name)
				}
				return err
			})
			return r
		}},
		{name: "ReadDir", run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			var r secOpResult
			r.err = sectree.Try(func() error {
				es, err := e.FS.ReadDir(ctx, ws, p)
				for _, en := range es {
					r.names = append(r.names, en.Name)
				}
				return err
			})
			return r
		}},
		{name: "Stat", run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			return secOpResult{err: sectree.Try(func() error { _, err := e.FS.Stat(ctx, ws, p); return err })}
		}},
		{name: "ReadFile", run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			var r secOpResult
			r.err = sectree.Try(func() error {
				f, err := e.FS.ReadFile(ctx, ws, p)
				r.contents = append(r.contents, f.Content)
				return err
			})
			return r
		}},
		{name: "OpenRead", run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			var r secOpResult
			r.err = sectree.Try(func() error {
				f, _, err := e.FS.OpenRead(ctx, ws, p)
				if err != nil {
					return err
				}
				b, rerr := sectree.ReadAllFile(f)
				r.contents = append(r.contents, b)
				return rerr
			})
			return r
		}},
		{name: "CreateAt", run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			dir, name := secSplit(p)
			return secOpResult{err: sectree.Try(func() error { _, err := e.FS.CreateEntry(ctx, ws, dir, name, davfs.TypeFile); return err })}
		}},
		{name: "CreateDirAt", run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			dir, name := secSplit(p)
			return secOpResult{err: sectree.Try(func() error { _, err := e.FS.CreateEntry(ctx, ws, dir, name, davfs.TypeDirectory); return err })}
		}},
		{name: "CreateIn", run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			return secOpResult{
				err:     sectree.Try(func() error { _, err := e.FS.CreateEntry(ctx, ws, p, "new.txt", davfs.TypeFile); return err }),
				touched: []string{path.Join(p, "new.txt")},
			}
		}},
		{name: "UpdateFile", run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			rev := sectree.Rev(ctx, e, ws, p)
			return secOpResult{err: sectree.Try(func() error { _, err := e.FS.UpdateFile(ctx, ws, p, []byte("pwned\n"), rev); return err })}
		}},
		{name: "WriteStream", run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			return secOpResult{err: sectree.Try(func() error {
				_, _, err := e.FS.WriteStream(ctx, ws, p, strings.NewReader("pwned\n"), 1<<20, davfs.Precondition{})
				return err
			})}
		}},
		{name: "MoveSrc", run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			_, free := secValid(ws)
			rev := sectree.Rev(ctx, e, ws, p)
			return secOpResult{
				err:     sectree.Try(func() error { _, err := e.FS.MoveEntry(ctx, ws, p, free, rev); return err }),
				touched: []string{free},
			}
		}},
		{name: "MoveDst", run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			src, _ := secValid(ws)
			rev := sectree.Rev(ctx, e, ws, src)
			return secOpResult{
				err:     sectree.Try(func() error { _, err := e.FS.MoveEntry(ctx, ws, src, p, rev); return err }),
				touched: []string{src},
			}
		}},
		{name: "DeleteEntry", run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			rev := sectree.Rev(ctx, e, ws, p)
			return secOpResult{err: sectree.Try(func() error { return e.FS.DeleteEntry(ctx, ws, p, rev, true) })}
		}},

		// webdav.FileSystem methods. secDavFS is obtained inside sectree.Try so an
		// unimplemented adapter fails these subtests only.
		{name: "WebDAV.Read", webdav: true, run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			var r secOpResult
			r.err = sectree.Try(func() error {
				f, err := dav.NewFileSystem(e.FS, nil, dav.RequestState{}).OpenFile(ctx, secDavName(ws, p), os.O_RDONLY, 0)
				if err != nil {
					return err
				}
				defer f.Close()
				b, err := io.ReadAll(f)
				r.contents = append(r.contents, b)
				return err
			})
			return r
		}},
		{name: "WebDAV.Write", webdav: true, run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			return secOpResult{err: sectree.Try(func() error {
				f, err := dav.NewFileSystem(e.FS, nil, dav.RequestState{}).OpenFile(ctx, secDavName(ws, p), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
				if err != nil {
					return err
				}
				// Return the first error unwrapped: x/net/webdav tests it
				// with os.IsPermission & co, which see through no join.
				_, werr := f.Write([]byte("pwned\n"))
				if cerr := f.Close(); werr == nil {
					werr = cerr
				}
				return werr
			})}
		}},
		{name: "WebDAV.Stat", webdav: true, run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			return secOpResult{err: sectree.Try(func() error {
				_, err := dav.NewFileSystem(e.FS, nil, dav.RequestState{}).Stat(ctx, secDavName(ws, p))
				return err
			})}
		}},
		{name: "WebDAV.Readdir", webdav: true, run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			var r secOpResult
			r.err = sectree.Try(func() error {
				f, err := dav.NewFileSystem(e.FS, nil, dav.RequestState{}).OpenFile(ctx, secDavName(ws, p), os.O_RDONLY, 0)
				if err != nil {
					return err
				}
				defer f.Close()
				fis, err := f.Readdir(-1)
				for _, fi := range fis {
					r.names = append(r.names, fi.Name())
				}
				return err
			})
			return r
		}},
		{name: "WebDAV.Mkdir", webdav: true, run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			return secOpResult{err: sectree.Try(func() error {
				return dav.NewFileSystem(e.FS, nil, dav.RequestState{}).Mkdir(ctx, secDavName(ws, p), 0o755)
			})}
		}},
		{name: "WebDAV.Remove", webdav: true, run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			return secOpResult{err: sectree.Try(func() error {
				return dav.NewFileSystem(e.FS, nil, dav.RequestState{}).RemoveAll(ctx, secDavName(ws, p))
			})}
		}},
		{name: "WebDAV.RenameS", webdav: true, run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			_, free := secValid(ws)
			return secOpResult{
				err: sectree.Try(func() error {
					return dav.NewFileSystem(e.FS, nil, dav.RequestState{}).Rename(ctx, secDavName(ws, p), secDavName(ws, free))
				}),
				touched: []string{free},
			}
		}},
		{name: "WebDAV.RenameD", webdav: true, run: func(ctx context.Context, e *sectree.Env, ws davfs.Workspace, p string) secOpResult {
			src, _ := secValid(ws)
			return secOpResult{
				err: sectree.Try(func() error {
					return dav.NewFileSystem(e.FS, nil, dav.RequestState{}).Rename(ctx, secDavName(ws, src), secDavName(ws, p))
				}),
				touched: []string{src},
			}
		}},
	}
}

// secSentinels maps acceptable davfs codes to the fs sentinels the
// webdav.FileSystem boundary must use instead.
func secSentinels(codes []davfs.Code) []error {
	var out []error
	for _, c := range codes {
		switch c {
		case davfs.CodeNotFound:
			out = append(out, fs.ErrNotExist)
		case davfs.CodeAlreadyExists:
			out = append(out, fs.ErrExist)
		case davfs.CodePermissionDenied:
			out = append(out, fs.ErrPermission)
		case davfs.CodeInvalidArgument:
			out = append(out, fs.ErrInvalid, fs.ErrPermission, fs.ErrNotExist)
		case davfs.CodeFailedPrecondition:
			// Not a directory / not regular: the handler answers 405/409.
			out = append(out, fs.ErrPermission, fs.ErrInvalid, fs.ErrExist, fs.ErrNotExist)
		}
	}
	return out
}

// secIsSentinel checks what x/net/webdav itself checks: os.IsNotExist and
// os.IsExist only look inside *fs.PathError, not through a custom wrapper.
func secIsSentinel(err, sentinel error) bool {
	switch sentinel {
	case fs.ErrNotExist:
		return os.IsNotExist(err)
	case fs.ErrExist:
		return os.IsExist(err)
	case fs.ErrPermission:
		return os.IsPermission(err)
	}
	return errors.Is(err, sentinel)
}

func secCheckOutcome(t *testing.T, op secOp, w secWant, r secOpResult, base string) {
	t.Helper()
	for _, c := range r.contents {
		sectree.NoSecret(t, op.name, c)
	}
	for _, n := range r.names {
		if sectree.ForbiddenNames[n] || strings.Contains(n, "secret") || n == "canary.txt" {
			t.Errorf("%s listed forbidden name %q", op.name, n)
		}
	}
	if r.err == nil {
		if !w.ok {
			t.Errorf("%s succeeded; want error %v %v", op.name, w.codes, w.reasons)
		}
		return
	}
	if sectree.IsPanic(r.err) {
		t.Errorf("%s: %v", op.name, r.err)
		return
	}
	sectree.CheckMessage(t, op.name, r.err.Error(), base)
	if w.ok && len(w.codes) == 0 {
		return
	}
	if op.webdav {
		var pe *fs.PathError
		if !errors.As(r.err, &pe) {
			t.Errorf("%s: error %T %q is not a *fs.PathError", op.name, r.err, r.err)
		}
		for _, s := range secSentinels(w.codes) {
			if secIsSentinel(r.err, s) {
				return
			}
		}
		t.Errorf("%s: error %q (%T) is none of %v (davfs codes %v)", op.name, r.err, r.err, secSentinels(w.codes), w.codes)
		return
	}
	var de *davfs.Error
	if !errors.As(r.err, &de) {
		t.Errorf("%s: error %T %q is not a *davfs.Error", op.name, r.err, r.err)
		return
	}
	codeOK, reasonOK := false, len(w.reasons) == 0
	for _, c := range w.codes {
		codeOK = codeOK || de.Code == c
	}
	for _, rs := range w.reasons {
		reasonOK = reasonOK || de.Reason == rs
	}
	if !codeOK || !reasonOK {
		t.Errorf("%s: got %v/%s (%q); want code in %v, reason in %v", op.name, de.Code, de.Reason, de.Message, w.codes, w.reasons)
	}
}

// TestSecLayoutsEveryOperation runs every layout row against every
// operation, with openat2 and with the O_NOFOLLOW fallback walk.
func TestSecLayoutsEveryOperation(t *testing.T) {
	for _, mode := range []struct {
		name    string
		disable bool
	}{{"openat2", false}, {"fallback", true}} {
		t.Run(mode.name, func(t *testing.T) {
			for _, row := range secRows() {
				t.Run(row.name, func(t *testing.T) {
					t.Parallel() // each row has its own trees; mostly I/O latency
					for _, op := range secOps() {
						if op.webdav && row.noDav {
							continue
						}
						t.Run(op.name, func(t *testing.T) {
							secRunRowOp(t, row, op, mode.disable)
						})
					}
				})
			}
		})
	}
}

func secRunRowOp(t *testing.T, row secRow, op secOp, disableOpenat2 bool) {
	e := sectree.NewEnv(t, "", row.layout, func(c *davfs.Config) { c.DisableOpenat2 = disableOpenat2 })
	before := sectree.Snapshot(t, e.Base)

	w := row.want
	if op.webdav && row.davWant != nil {
		w = *row.davWant
	}
	if ow, ok := row.over[op.name]; ok {
		w = ow
	} else if row.finalExists {
		switch op.name {
		case "CreateAt", "CreateDirAt", "MoveDst", "WebDAV.Mkdir", "WebDAV.RenameD":
			w = w.or(secWantExists)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var r secOpResult
	unblock := func() { sectree.UnblockFIFOs(e.Base, row.layout) }
	_ = sectree.WithTimeout(t, 10*time.Second, unblock, func() error {
		r = op.run(ctx, e, row.ws, row.path)
		return nil
	})
	secCheckOutcome(t, op, w, r, e.Base)

	// Nothing outside the target may change; on error, nothing at all (no
	// temp file left behind either).
	after := sectree.Snapshot(t, e.Base)
	var skip func(string) bool
	if r.err == nil {
		target := sectree.HostRel(row.ws, row.path)
		var touched []string
		for _, p := range r.touched {
			touched = append(touched, sectree.HostRel(row.ws, p))
		}
		skip = func(rel string) bool {
			if sectree.Under(rel, target) {
				return true
			}
			for _, p := range touched {
				if sectree.Under(rel, p) {
					return true
				}
			}
			return false
		}
	}
	for _, d := range sectree.Diff(before, after, skip) {
		t.Errorf("%s (err=%v) changed the tree: %s", op.name, r.err, d)
	}
	// Canaries: never changed even when the op legitimately touched the target.
	for rel, n := range before {
		if sectree.IsSecret(rel) && n.Type == "file" && after[rel] != n {
			t.Errorf("%s changed canary %s", op.name, rel)
		}
	}
}

// TestSecLayoutsListings walks every visible directory of every layout
// (ListEntries with paging, ReadDir, webdav Readdir, ListProjects) and
// checks the names shown are exactly the regular files and directories on
// disk minus symlinks, denylisted names and (for Global) everything but
// skills/ and AGENTS.md.
func TestSecLayoutsListings(t *testing.T) {
	all := secAllLayouts()
	for _, mode := range []struct {
		name    string
		disable bool
	}{{"openat2", false}, {"fallback", true}} {
		t.Run(mode.name, func(t *testing.T) {
			e := sectree.NewEnv(t, "", all, func(c *davfs.Config) { c.DisableOpenat2 = mode.disable })
			ctx := context.Background()
			before := sectree.Snapshot(t, e.Base)

			var projs []string
			err := sectree.Try(func() error {
				pp, err := e.FS.ListProjects(ctx, 0, "")
				for _, p := range pp.Projects {
					projs = append(projs, p.Name)
				}
				return err
			})
			if err != nil {
				t.Errorf("ListProjects: %v", err)
			}
			if got, want := strings.Join(projs, ","), "p,q"; got != want {
				t.Errorf("ListProjects = %s; want %s (no symlinked project)", got, want)
			}

			secWalkVisible(t, e, sectree.Project("p"), "")
			secWalkVisible(t, e, sectree.Global, "")
			if diffs := sectree.Diff(before, sectree.Snapshot(t, e.Base), nil); len(diffs) > 0 {
				t.Errorf("listing changed the tree: %v", diffs)
			}
		})
	}
}

// secExpectedNames computes what a listing of ws/dir must show from disk.
func secExpectedNames(t *testing.T, e *sectree.Env, ws davfs.Workspace, dir string) []string {
	if ws.Scope == davfs.ScopeGlobal && dir == "" {
		want := []string{"skills"}
		if fi, err := os.Lstat(filepath.Join(e.Codex(), "AGENTS.md")); err == nil && fi.Mode().IsRegular() {
			want = append(want, "AGENTS.md")
		}
		return want
	}
	host := filepath.Join(e.Base, sectree.HostRel(ws, dir))
	des, err := os.ReadDir(host)
	if err != nil {
		t.Fatal(err)
	}
	var dirs, files []string
	var dirSt unix.Stat_t
	if err := unix.Lstat(host, &dirSt); err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		if sectree.ForbiddenNames[de.Name()] || !utf8.ValidString(de.Name()) {
			continue
		}
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(host, de.Name()), &st); err == nil && st.Dev != dirSt.Dev {
			continue // a mount point (another file system) is never shown
		}
		if secIsMountRoot(filepath.Join(host, de.Name())) {
			continue // a bind mount is never shown either
		}
		switch {
		case de.Type().IsDir():
			dirs = append(dirs, de.Name())
		case de.Type().IsRegular():
			files = append(files, de.Name())
		}
	}
	return append(dirs, files...)
}

func secWalkVisible(t *testing.T, e *sectree.Env, ws davfs.Workspace, dir string) {
	ctx := context.Background()
	want := secExpectedNames(t, e, ws, dir)
	where := sectree.HostRel(ws, dir)

	ents, err := sectree.ListAll(ctx, e.FS, ws, dir)
	if err != nil {
		t.Errorf("ListEntries(%s): %v", where, err)
		return
	}
	var got []string
	var subdirs []string
	for _, en := range ents {
		if en.Type == davfs.TypeUnspecified {
			continue // a FIFO may be shown as neither file nor directory
		}
		if secIsMountRoot(filepath.Join(e.Base, sectree.HostRel(ws, en.Path))) {
			// A same-file-system bind mount has the parent's st_dev: only a
			// mount-id check (statx STATX_MNT_ID) tells it from a directory.
			t.Errorf("ListEntries(%s) shows mount point %q, which can never be entered", where, en.Name)
			continue
		}
		got = append(got, en.Name)
		secCheckSameRevision(t, e, ws, en)
		if wantPath := path.Join(dir, en.Name); en.Path != wantPath {
			t.Errorf("ListEntries(%s): entry %q has Path %q; want %q", where, en.Name, en.Path, wantPath)
		}
		if en.Type == davfs.TypeDirectory {
			subdirs = append(subdirs, en.Path)
		}
	}
	if strings.Join(got, "/") != strings.Join(want, "/") {
		t.Errorf("ListEntries(%s) = %q; want %q (dirs first, by name; no symlinks/denylisted)", where, got, want)
	}

	var rd []davfs.Entry
	if err := sectree.Try(func() (err error) { rd, err = e.FS.ReadDir(ctx, ws, dir); return err }); err != nil {
		t.Errorf("ReadDir(%s): %v", where, err)
	} else {
		var names []string
		for _, en := range rd {
			if en.Type != davfs.TypeUnspecified && !secIsMountRoot(filepath.Join(e.Base, sectree.HostRel(ws, en.Path))) {
				names = append(names, en.Name)
			}
		}
		if strings.Join(names, "/") != strings.Join(want, "/") {
			t.Errorf("ReadDir(%s) = %q; want %q", where, names, want)
		}
	}

	err = sectree.Try(func() error {
		f, err := dav.NewFileSystem(e.FS, nil, dav.RequestState{}).OpenFile(ctx, secDavName(ws, dir), os.O_RDONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		fis, err := f.Readdir(-1)
		if err != nil {
			return err
		}
		var names []string
		for _, fi := range fis {
			if (fi.IsDir() || fi.Mode().IsRegular()) && !secIsMountRoot(filepath.Join(e.Base, sectree.HostRel(ws, path.Join(dir, fi.Name())))) {
				names = append(names, fi.Name())
			}
			if et, ok := fi.(webdav.ETager); !ok {
				t.Errorf("WebDAV Readdir(%s): FileInfo %q does not implement webdav.ETager", where, fi.Name())
			} else if tag, err := et.ETag(ctx); err != nil {
				t.Errorf("WebDAV Readdir(%s): ETag of %q: %v", where, fi.Name(), err)
			} else if en, err := e.FS.Stat(ctx, ws, path.Join(dir, fi.Name())); err == nil && tag != `"`+en.Revision+`"` {
				t.Errorf("WebDAV Readdir(%s): ETag of %q is %s; Stat revision is %q", where, fi.Name(), tag, en.Revision)
			}
		}
		// x/net/webdav sorts itself; compare as sets.
		if strings.Join(secSorted(names), "/") != strings.Join(secSorted(want), "/") {
			t.Errorf("WebDAV Readdir(%s) = %q; want %q", where, names, want)
		}
		return nil
	})
	if err != nil {
		t.Errorf("WebDAV Readdir(%s): %v", where, err)
	}

	for _, sd := range subdirs {
		secWalkVisible(t, e, ws, sd)
	}
}

func secSorted(s []string) []string {
	return slices.Sorted(slices.Values(s))
}

// TestSecOpenChangesNothing: Open over every adversarial layout at once
// changes nothing on disk (skills/ exists), and with skills/ missing adds
// exactly that one directory.
func TestSecOpenChangesNothing(t *testing.T) {
	all := secAllLayouts()
	t.Run("skills present", func(t *testing.T) {
		base := t.TempDir()
		sectree.Build(t, base, sectree.BaseLayout)
		sectree.Build(t, base, all)
		before := sectree.Snapshot(t, base)
		f, err := sectree.Open(sectree.Config(base))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if err := sectree.Close(f); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, d := range sectree.Diff(before, sectree.Snapshot(t, base), nil) {
			t.Errorf("Open changed the tree: %s", d)
		}
	})
	t.Run("skills missing", func(t *testing.T) {
		base := t.TempDir()
		sectree.Build(t, base, []string{"projects/p/ok.txt", "codex/auth.json", "outside/canary.txt"})
		before := sectree.Snapshot(t, base)
		f, err := sectree.Open(sectree.Config(base))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		_ = sectree.Close(f)
		after := sectree.Snapshot(t, base)
		diffs := sectree.Diff(before, after, nil)
		if len(diffs) != 1 || after["codex/skills"].Type != "dir" || after["codex/skills"].Mode.Perm() != 0o755 {
			t.Errorf("Open with skills/ missing: got changes %v; want exactly codex/skills added as a 0755 directory", diffs)
		}
	})
}

// TestSecSkillsIsSymlinkAtOpen: $CODEX_HOME/skills is a symlink to a canary
// dir. Open must refuse, or serve nothing through it; the link and the
// canary stay untouched either way.
func TestSecSkillsIsSymlinkAtOpen(t *testing.T) {
	base := t.TempDir()
	sectree.Build(t, base, []string{"codex/skills => ../outside/dir", "codex/AGENTS.md", "outside/dir/canary.txt", "projects/p/ok.txt"})
	before := sectree.Snapshot(t, base)
	f, err := sectree.Open(sectree.Config(base))
	if err != nil {
		// An Open error is for the operator's log, not a client: it need
		// not be a *davfs.Error.
		if sectree.IsPanic(err) {
			t.Fatalf("Open: %v", err)
		}
		t.Logf("Open refused: %v", err)
	} else {
		defer sectree.Close(f)
		ctx := context.Background()
		e := &sectree.Env{Base: base, FS: f}
		for _, op := range secOps() {
			r := op.run(ctx, e, sectree.Global, "skills/canary.txt")
			secCheckOutcome(t, op, secWantSymlink.or(secWant{codes: []davfs.Code{davfs.CodeNotFound, davfs.CodeFailedPrecondition}}), r, base)
		}
		ents, _ := sectree.ListAll(ctx, f, sectree.Global, "")
		for _, en := range ents {
			if en.Name == "skills" {
				t.Errorf("Global root lists skills although it is a symlink")
			}
		}
	}
	for _, d := range sectree.Diff(before, sectree.Snapshot(t, base), nil) {
		t.Errorf("tree changed: %s", d)
	}
}

// TestSecFullDisk: the projects root is a 256 KiB tmpfs filled to the last
// byte. UpdateFile and WriteStream fail with ResourceExhausted/NO_SPACE,
// the original bytes survive and no temp file remains. Needs root (or
// CAP_SYS_ADMIN) to mount the tmpfs; without it the test fails and says so.
func TestSecFullDisk(t *testing.T) {
	sectree.Modes(t, func(t *testing.T, tweak func(*davfs.Config)) {
		base := t.TempDir()
		projects := filepath.Join(base, "projects")
		if err := os.Mkdir(projects, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", projects, "tmpfs", 0, "size=256k,mode=0755"); err != nil {
			t.Fatalf("mount a 256 KiB tmpfs for the full-disk test: %v (this test needs root or CAP_SYS_ADMIN; run `go test` as root)", err)
		}
		t.Cleanup(func() {
			if err := unix.Unmount(projects, 0); err != nil {
				_ = unix.Unmount(projects, unix.MNT_DETACH)
			}
		})
		e := sectree.NewEnv(t, base, []string{"projects/p/big.txt"}, tweak)
		if err := os.WriteFile(filepath.Join(projects, "p", "big.txt"), []byte(strings.Repeat("original\n", 4000)), 0o640); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		P := sectree.Project("p")
		// Take the revisions first: hashing must not need disk space anyway.
		rev := sectree.Rev(ctx, e, P, "big.txt")
		revOK := sectree.Rev(ctx, e, P, "ok.txt")

		filler, err := os.Create(filepath.Join(projects, "filler"))
		if err != nil {
			t.Fatal(err)
		}
		chunk := make([]byte, 4096)
		for {
			if _, err := filler.Write(chunk); err != nil {
				if !errors.Is(err, unix.ENOSPC) {
					t.Fatalf("filling tmpfs: %v", err)
				}
				break
			}
		}
		_ = filler.Close()
		before := sectree.Snapshot(t, base)

		content := []byte(strings.Repeat("new text\n", 10000))
		err = sectree.Try(func() error { _, err := e.FS.UpdateFile(ctx, P, "big.txt", content, rev); return err })
		secExpectNoSpace(t, "UpdateFile big.txt", err, e.Base)
		err = sectree.Try(func() error { _, err := e.FS.UpdateFile(ctx, P, "ok.txt", content, revOK); return err })
		secExpectNoSpace(t, "UpdateFile ok.txt", err, e.Base)
		err = sectree.Try(func() error {
			_, _, err := e.FS.WriteStream(ctx, P, "big.txt", strings.NewReader(string(content)), 1<<20, davfs.Precondition{IfMatch: rev})
			return err
		})
		secExpectNoSpace(t, "WriteStream big.txt", err, e.Base)
		err = sectree.Try(func() error {
			_, _, err := e.FS.WriteStream(ctx, P, "okdir/new.bin", strings.NewReader(string(content)), 1<<20, davfs.Precondition{IfNoneMatch: true})
			return err
		})
		secExpectNoSpace(t, "WriteStream new file", err, e.Base)
		// WebDAV PUT: the sidecar answers 507 from the davfs error inside.
		err = sectree.Try(func() error {
			return secDavPut(ctx, e.FS, secDavName(P, "big.txt"), content, davfs.Precondition{IfMatch: rev})
		})
		secExpectNoSpace(t, "WebDAV PUT", err, "")

		for _, d := range sectree.Diff(before, sectree.Snapshot(t, base), nil) {
			t.Errorf("failed write on a full disk changed the tree: %s", d)
		}
		// The FS still works once space is back.
		if err := os.Remove(filepath.Join(projects, "filler")); err != nil {
			t.Fatal(err)
		}
		err = sectree.Try(func() error { _, err := e.FS.UpdateFile(ctx, P, "big.txt", content, rev); return err })
		if err != nil {
			t.Errorf("UpdateFile after freeing space: %v", err)
		}
	})
}

func secExpectNoSpace(t *testing.T, what string, err error, base string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s on a full disk succeeded", what)
		return
	}
	sectree.CheckDavErr(t, what, err, base)
	if c, r := davfs.CodeOf(err), davfs.ReasonOf(err); c != davfs.CodeResourceExhausted || r != davfs.ReasonNoSpace {
		t.Errorf("%s on a full disk: got %v/%s; want ResourceExhausted/NO_SPACE", what, c, r)
	}
}

// secAllLayouts is the union of every row's layout, each line once (rows
// that replace base-layout names are left out: they conflict).
func secAllLayouts() []string {
	var all []string
	for _, row := range secRows() {
		if slices.ContainsFunc(row.layout, func(l string) bool { return strings.HasPrefix(l, "-") }) {
			continue
		}
		for _, l := range row.layout {
			if !slices.Contains(all, l) {
				all = append(all, l)
			}
		}
	}
	return all
}

// secIsMountRoot reports whether p is the root of a mount (statx
// STATX_ATTR_MOUNT_ROOT, Linux 5.8+).
func secIsMountRoot(p string) bool {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS, &stx); err != nil {
		return false
	}
	return stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
}

// secCheckSameRevision: a listed entry is addressable by its Path and Stat
// gives the same revision (one revision on every surface).
func secCheckSameRevision(t *testing.T, e *sectree.Env, ws davfs.Workspace, en davfs.Entry) {
	t.Helper()
	var st davfs.Entry
	err := sectree.Try(func() (err error) { st, err = e.FS.Stat(context.Background(), ws, en.Path); return err })
	switch {
	case err != nil:
		t.Errorf("listed %q, but Stat of its Path fails: %v", en.Path, err)
	case st.Revision != en.Revision:
		t.Errorf("%q: listing revision %q, Stat revision %q", en.Path, en.Revision, st.Revision)
	case st.Type != en.Type || st.Size != en.Size:
		t.Errorf("%q: listing says type %v size %d, Stat says %v %d", en.Path, en.Type, en.Size, st.Type, st.Size)
	}
}

// TestSecCursorConfinement: a cursor is valid only for the workspace and
// directory (and directory revision) it came from (PRD 7.5).
func TestSecCursorConfinement(t *testing.T) {
	e := sectree.NewEnv(t, "", []string{
		"projects/p/a/1.txt", "projects/p/a/2.txt", "projects/p/a/3.txt",
		"projects/p/b/1.txt", "projects/p/b/2.txt", "projects/p/b/3.txt",
		"projects/q/a/1.txt", "projects/q/a/2.txt", "projects/q/a/3.txt",
		"codex/skills/a/1.txt", "codex/skills/a/2.txt", "codex/skills/a/3.txt",
	}, nil)
	ctx := context.Background()
	pg, err := e.FS.ListEntries(ctx, sectree.Project("p"), "a", 1, "")
	if err != nil || pg.NextCursor == "" {
		t.Fatalf("first page: %v (cursor %q)", err, pg.NextCursor)
	}
	cursor := pg.NextCursor
	refused := secWant{codes: []davfs.Code{davfs.CodeAborted, davfs.CodeInvalidArgument}, reasons: []davfs.Reason{davfs.ReasonCursorStale, davfs.ReasonInvalidCursor}}
	for _, other := range []struct {
		ws  davfs.Workspace
		dir string
	}{{sectree.Project("p"), "b"}, {sectree.Project("q"), "a"}, {sectree.Global, "skills/a"}, {sectree.Project("p"), ""}} {
		_, err := e.FS.ListEntries(ctx, other.ws, other.dir, 1, cursor)
		secCheckOutcome(t, secOp{name: fmt.Sprintf("ListEntries(%v %q, cursor of p/a)", other.ws, other.dir)}, refused, secOpResult{err: err}, e.Base)
	}
	if _, err := e.FS.ListEntries(ctx, sectree.Project("p"), "a", 1, cursor); err != nil {
		t.Errorf("the cursor no longer works where it came from: %v", err)
	}
	// A change of the directory invalidates it: Aborted/CURSOR_STALE.
	if _, err := e.FS.CreateEntry(ctx, sectree.Project("p"), "a", "4.txt", davfs.TypeFile); err != nil {
		t.Fatal(err)
	}
	_, err = e.FS.ListEntries(ctx, sectree.Project("p"), "a", 1, cursor)
	secCheckOutcome(t, secOp{name: "ListEntries after a change"}, secWant{codes: []davfs.Code{davfs.CodeAborted}, reasons: []davfs.Reason{davfs.ReasonCursorStale}}, secOpResult{err: err}, e.Base)
}

// secDavPut writes body through the webdav.FileSystem like a PUT does.
func secDavPut(ctx context.Context, f *davfs.FS, name string, body []byte, pre davfs.Precondition) error {
	fh, err := dav.NewFileSystem(f, nil, wdPre(pre)).OpenFile(ctx, name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, werr := fh.Write(body)
	if cerr := fh.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// TestSecWebDAVUploadTooLarge: a WebDAV upload over MaxUploadSize commits
// nothing, leaves no temp file, and carries TOO_LARGE for the 413.
func TestSecWebDAVUploadTooLarge(t *testing.T) {
	e := sectree.NewEnv(t, "", nil, func(c *davfs.Config) { c.MaxUploadSize = 4096 })
	ctx := context.Background()
	before := sectree.Snapshot(t, e.Base)
	for _, name := range []string{"ok.txt", "okdir/new.bin"} {
		err := sectree.Try(func() error {
			return secDavPut(ctx, e.FS, secDavName(sectree.Project("p"), name), []byte(strings.Repeat("x", 8192)), davfs.Precondition{})
		})
		if err == nil {
			t.Errorf("WebDAV PUT of 8 KiB over a 4 KiB limit succeeded (%s)", name)
			continue
		}
		if c, r := davfs.CodeOf(err), davfs.ReasonOf(err); c != davfs.CodeResourceExhausted || r != davfs.ReasonTooLarge {
			t.Errorf("WebDAV PUT too large (%s): got %v/%s (%v); want ResourceExhausted/TOO_LARGE reachable with errors.As", name, c, r, err)
		}
	}
	for _, d := range sectree.Diff(before, sectree.Snapshot(t, e.Base), nil) {
		t.Errorf("a refused upload changed the tree: %s", d)
	}
}

// TestSecUseAfterClose: after Close, the FS's old root fd numbers get
// reused by the process (here: by directories outside the roots). No
// operation may then act relative to those reused fds: every call fails
// with a *davfs.Error, returns no canary content, changes nothing.
func TestSecUseAfterClose(t *testing.T) {
	sectree.Modes(t, func(t *testing.T, tweak func(*davfs.Config)) {
		e := sectree.NewEnv(t, "", []string{"outside/dir/ok.txt", "outside/dir/skills/ok.md", "outside/dir/okdir/"}, tweak)
		if err := sectree.Close(e.FS); err != nil {
			t.Fatalf("Close: %v", err)
		}
		// Grab the freed descriptor numbers with outside directories.
		for range 32 {
			d, err := os.Open(filepath.Join(e.Base, "outside", "dir"))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
		}
		before := sectree.Snapshot(t, e.Base)
		ctx := context.Background()
		for _, ws := range []davfs.Workspace{sectree.Project("p"), sectree.Global} {
			for _, p := range []string{"canary.txt", "ok.txt", "skills/ok.md", "okdir"} {
				for _, op := range secOps() {
					r := op.run(ctx, e, ws, p)
					for _, c := range r.contents {
						sectree.NoSecret(t, op.name+" after Close", c)
					}
					if r.err == nil {
						t.Errorf("%s(%v, %q) succeeded after Close", op.name, ws.Scope, p)
					} else if sectree.IsPanic(r.err) {
						t.Errorf("%s(%v, %q) after Close: %v", op.name, ws.Scope, p, r.err)
					}
				}
			}
		}
		if err := sectree.Try(func() error { _, err := e.FS.ListProjects(ctx, 0, ""); return err }); err == nil || sectree.IsPanic(err) {
			t.Errorf("ListProjects after Close: %v; want an error", err)
		}
		for _, d := range sectree.Diff(before, sectree.Snapshot(t, e.Base), nil) {
			t.Errorf("an operation after Close changed the tree: %s", d)
		}
	})
}

func secMerge(a, b map[string]secWant) map[string]secWant {
	m := map[string]secWant{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}
