package dav_test

// Fuzz targets (issue 2). The committed corpus under testdata/fuzz/ runs in
// every plain `go test`; fuzz locally with
//
//	go test ./davfs/ -run '^$' -fuzz '^FuzzPath$' -fuzztime 60s
//	go test ./davfs/ -run '^$' -fuzz '^FuzzOps$' -fuzztime 60s

import (
	"context"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/sectree"
	"github.com/agentworkspace/files/sidecar/internal/dav"
)

// secFuzzLayout is a small tree full of traps.
var secFuzzLayout = []string{
	"projects/p/a/x.txt",
	"projects/p/a/b/",
	"projects/p/link => ../../outside/dir",
	"projects/p/flink => ../../outside/canary.txt",
	"projects/p/alias => a",
	"projects/p/.git/config",
	"projects/p/node_modules/m.js",
	"projects/p/h.json == codex/auth.json",
	"projects/p/pipe |",
	"codex/skills/s.md",
	"codex/skills/leak => ../auth.json",
	"codex/skills/up => ..",
	"codex/Skills/x.md",
	"codex/sessions/s.jsonl",
}

// secSyntaxOK is the PRD 8.1 path grammar (before any resolution).
func secSyntaxOK(p string) bool {
	if p == "" {
		return true
	}
	if len(p) > 4096 || !utf8.ValidString(p) || strings.ContainsRune(p, 0) || strings.HasPrefix(p, "/") {
		return false
	}
	segs := strings.Split(p, "/")
	if len(segs) > 64 {
		return false
	}
	for _, s := range segs {
		if s == "" || s == "." || s == ".." || sectree.ForbiddenNames[s] {
			return false
		}
	}
	return true
}

// secMayResolve reports whether a successful Stat/ReadFile of p in ws is
// allowed: valid syntax, inside the Global allowlist, and no existing
// segment on disk is a symlink.
func secMayResolve(base string, ws davfs.Workspace, p string) bool {
	if !secSyntaxOK(p) {
		return false
	}
	if ws.Scope == davfs.ScopeGlobal && p != "" && p != "AGENTS.md" && p != "skills" && !strings.HasPrefix(p, "skills/") {
		return false
	}
	host := filepath.Join(base, sectree.HostRel(ws, ""))
	if p == "" {
		return true
	}
	for _, s := range strings.Split(p, "/") {
		host = filepath.Join(host, s)
		fi, err := os.Lstat(host)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			return false
		}
	}
	return true
}

func FuzzPath(f *testing.F) {
	for _, s := range []string{"", "a/x.txt", "link/canary.txt", "../q/secret.txt", "skills/leak"} {
		f.Add(s)
	}
	e := sectree.NewEnv(f, "", secFuzzLayout, nil)
	e2 := sectree.NewEnv(f, "", secFuzzLayout, func(c *davfs.Config) { c.DisableOpenat2 = true })
	f.Fuzz(func(t *testing.T, p string) {
		ctx := context.Background()
		for _, env := range []*sectree.Env{e, e2} {
			for _, ws := range []davfs.Workspace{sectree.Project("p"), sectree.Global} {
				unblock := func() { sectree.UnblockFIFOs(env.Base, secFuzzLayout) }
				var en davfs.Entry
				err := sectree.WithTimeout(t, 5*time.Second, unblock, func() (err error) { en, err = env.FS.Stat(ctx, ws, p); return err })
				sectree.CheckDavErr(t, "Stat", err, env.Base)
				if err == nil {
					if !secMayResolve(env.Base, ws, p) {
						t.Errorf("Stat(%v, %q) succeeded; the path is invalid, outside the allowlist or through a symlink", ws.Scope, p)
					}
					if en.Path != p {
						t.Errorf("Stat(%q).Path = %q", p, en.Path)
					}
				}
				var file davfs.File
				err = sectree.WithTimeout(t, 5*time.Second, unblock, func() (err error) { file, err = env.FS.ReadFile(ctx, ws, p); return err })
				sectree.CheckDavErr(t, "ReadFile", err, env.Base)
				sectree.NoSecret(t, "ReadFile", file.Content)
				if err == nil && !secMayResolve(env.Base, ws, p) {
					t.Errorf("ReadFile(%v, %q) succeeded; the path is invalid, outside the allowlist or through a symlink", ws.Scope, p)
				}
				err = sectree.WithTimeout(t, 5*time.Second, unblock, func() error {
					fh, _, err := env.FS.OpenRead(ctx, ws, p)
					if err == nil {
						b, _ := io.ReadAll(io.LimitReader(fh, 1<<20))
						_ = fh.Close()
						sectree.NoSecret(t, "OpenRead", b)
					}
					return err
				})
				sectree.CheckDavErr(t, "OpenRead", err, env.Base)
				err = sectree.WithTimeout(t, 5*time.Second, unblock, func() error {
					fh, _, err := env.FS.OpenReader(ctx, ws, p)
					if err == nil {
						b, _ := io.ReadAll(io.LimitReader(fh, 1<<20))
						_ = fh.Close()
						sectree.NoSecret(t, "OpenReader", b)
					}
					return err
				})
				sectree.CheckDavErr(t, "OpenReader", err, env.Base)
				var pg davfs.Page
				err = sectree.WithTimeout(t, 5*time.Second, unblock, func() (err error) { pg, err = env.FS.ListEntries(ctx, ws, p, 0, ""); return err })
				sectree.CheckDavErr(t, "ListEntries", err, env.Base)
				for _, en := range pg.Entries {
					secCheckListed(t, env, ws, en)
				}
			}
		}
	})
}

// secCheckListed fails when a listed entry is a symlink or forbidden name
// on disk, or an unknown name (a temp file).
func secCheckListed(t *testing.T, e *sectree.Env, ws davfs.Workspace, en davfs.Entry) {
	t.Helper()
	if sectree.ForbiddenNames[en.Name] {
		t.Errorf("listing shows denylisted %q", en.Path)
	}
	fi, err := os.Lstat(filepath.Join(e.Base, sectree.HostRel(ws, en.Path)))
	if err != nil {
		t.Errorf("listing shows %q which does not exist on disk: %v", en.Path, err)
		return
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("listing shows symlink %q", en.Path)
	}
	if ws.Scope == davfs.ScopeGlobal && path.Dir(en.Path) == "." && en.Name != "skills" && en.Name != "AGENTS.md" {
		t.Errorf("Global root lists %q", en.Name)
	}
}

// secOpsPool are the paths FuzzOps picks from.
var secOpsPool = []string{
	"", "a", "a/x.txt", "a/y.txt", "a/b", "a/b/z.txt", "c", "c/w.txt",
	"link", "link/canary.txt", "link/new.txt", "alias", "alias/x.txt",
	".git", ".git/config", "a/.git", "node_modules", "h.json", "pipe",
	"skills", "skills/s.md", "skills/t.md", "skills/leak", "skills/up/auth.json", "skills/d", "skills/d/u.md",
	"AGENTS.md", "auth.json", "Skills", "sessions/s.jsonl",
	"../q/secret.txt", "a/../link", "a//x.txt", "/a",
}

// secOpsNames are all names that may legitimately appear in a listing.
func secOpsNames() map[string]bool {
	m := map[string]bool{}
	for _, p := range append(append([]string(nil), secOpsPool...), sectree.BaseLayout...) {
		for _, s := range strings.Split(p, "/") {
			m[s] = true
		}
	}
	for _, l := range secFuzzLayout {
		l, _, _ = strings.Cut(l, " ")
		for _, s := range strings.Split(l, "/") {
			m[s] = true
		}
	}
	return m
}

// FuzzOps decodes bytes into a sequence of operations (3 bytes each: op
// (davfs API 0-9, webdav.FileSystem 10-13), a, b) on a fresh small fixture with symlink traps, and checks after each
// step and at the end: no panic, only *davfs.Error with known codes, no
// canary content returned, listings show no symlink/denylisted/temp name,
// nothing outside the project and the Global allowlist changed, the traps
// themselves are never removed or replaced.
func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 2, 3, 5, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 3*64 {
			data = data[:3*64]
		}
		e := sectree.NewEnv(t, "", secFuzzLayout, func(c *davfs.Config) { c.DisableOpenat2 = len(data)%2 == 1 })
		names := secOpsNames()
		before := sectree.Snapshot(t, e.Base)
		ctx := context.Background()
		unblock := func() { sectree.UnblockFIFOs(e.Base, secFuzzLayout) }
		for i := 0; i+2 < len(data); i += 3 {
			op, a, b := data[i]%14, data[i+1], data[i+2]
			ws := sectree.Project("p")
			if a&0x80 != 0 {
				ws = sectree.Global
			}
			pa := secOpsPool[int(a&0x7f)%len(secOpsPool)]
			pb := secOpsPool[int(b&0x7f)%len(secOpsPool)]
			body := []byte(strings.Repeat("v", int(b)) + "\n")
			rev := sectree.Rev(ctx, e, ws, pa)
			if b&1 == 1 && op == 2 {
				rev = "stale"
			}
			var what string
			var contents [][]byte
			var listed []davfs.Entry
			err := sectree.WithTimeout(t, 5*time.Second, unblock, func() error {
				switch op {
				case 0, 1:
					what = "CreateEntry"
					typ := davfs.TypeFile
					if op == 1 {
						typ = davfs.TypeDirectory
					}
					dir, name := secSplit(pa)
					_, err := e.FS.CreateEntry(ctx, ws, dir, name, typ)
					return err
				case 2:
					what = "UpdateFile"
					_, err := e.FS.UpdateFile(ctx, ws, pa, body, rev)
					return err
				case 3:
					what = "MoveEntry"
					_, err := e.FS.MoveEntry(ctx, ws, pa, pb, rev)
					return err
				case 4:
					what = "DeleteEntry"
					return e.FS.DeleteEntry(ctx, ws, pa, rev, b&1 == 1)
				case 5:
					what = "ListEntries"
					pg, err := e.FS.ListEntries(ctx, ws, pa, 0, "")
					listed = pg.Entries
					return err
				case 6:
					what = "ReadFile"
					fl, err := e.FS.ReadFile(ctx, ws, pa)
					contents = append(contents, fl.Content)
					return err
				case 7:
					what = "WriteStream"
					_, _, err := e.FS.WriteStream(ctx, ws, pa, strings.NewReader(string(body)), 1<<20,
						davfs.Precondition{IfMatch: map[bool]string{true: rev}[b&2 == 2], IfNoneMatch: b&4 == 4})
					return err
				case 8:
					what = "OpenRead"
					fh, _, err := e.FS.OpenRead(ctx, ws, pa)
					if err == nil {
						bs, _ := io.ReadAll(fh)
						_ = fh.Close()
						contents = append(contents, bs)
					}
					return err
				case 9:
					what = "ReadDir"
					es, err := e.FS.ReadDir(ctx, ws, pa)
					listed = es
					return err
				case 10:
					what = "WebDAV.Read"
					fh, err := dav.NewFileSystem(e.FS, nil, dav.RequestState{}).OpenFile(ctx, secDavName(ws, pa), os.O_RDONLY, 0)
					if err != nil {
						return secDavToDav(err)
					}
					defer fh.Close()
					if fis, err := fh.Readdir(-1); err == nil {
						for _, fi := range fis {
							listed = append(listed, davfs.Entry{Name: fi.Name(), Path: path.Join(pa, fi.Name())})
						}
						return nil
					}
					bs, err := io.ReadAll(fh)
					contents = append(contents, bs)
					return secDavToDav(err)
				case 11:
					what = "WebDAV.Write"
					pre := davfs.Precondition{IfMatch: map[bool]string{true: rev}[b&2 == 2], IfNoneMatch: b&4 == 4}
					return secDavToDav(secDavPut(ctx, e.FS, secDavName(ws, pa), body, pre))
				case 12:
					what = "WebDAV.Rename"
					return secDavToDav(dav.NewFileSystem(e.FS, nil, wdPre(davfs.Precondition{IfMatch: rev})).Rename(ctx, secDavName(ws, pa), secDavName(ws, pb)))
				default:
					what = "WebDAV.RemoveAll"
					return secDavToDav(dav.NewFileSystem(e.FS, nil, wdPre(davfs.Precondition{IfMatch: rev})).RemoveAll(ctx, secDavName(ws, pa)))
				}
			})
			sectree.CheckDavErr(t, what, err, e.Base)
			for _, c := range contents {
				sectree.NoSecret(t, what, c)
			}
			for _, en := range listed {
				secCheckListed(t, e, ws, en)
				if !names[en.Name] {
					t.Errorf("%s lists unexpected name %q (a davfs temp file?)", what, en.Path)
				}
			}
			if t.Failed() {
				t.Fatalf("step %d: %s(%v, %q, %q) -> %v", i/3, what, ws.Scope, pa, pb, err)
			}
		}

		after := sectree.Snapshot(t, e.Base)
		mutable := func(rel string) bool {
			// The project and the Global allowlist may change, except the traps.
			switch rel {
			case "projects/p/link", "projects/p/flink", "projects/p/alias", "codex/skills/leak", "codex/skills/up",
				"projects/p/.git", "projects/p/.git/config", "projects/p/node_modules", "projects/p/node_modules/m.js":
				return false
			}
			return sectree.Under(rel, "projects/p") || sectree.Under(rel, "codex/skills") || rel == "codex/AGENTS.md"
		}
		for _, d := range sectree.Diff(before, after, mutable) {
			t.Errorf("operations changed something outside their reach: %s", d)
		}
		for rel := range after {
			if mutable(rel) && !names[path.Base(rel)] {
				t.Errorf("unexpected name left on disk: %s (a davfs temp file?)", rel)
			}
		}
	})
}

// FuzzCursor: forged cursors never panic, are refused as a *davfs.Error,
// and never make a listing show entries of another directory or workspace.
func FuzzCursor(f *testing.F) {
	e := sectree.NewEnv(f, "", []string{
		"projects/p/a/1.txt", "projects/p/a/2.txt", "projects/p/a/3.txt",
		"projects/p/b/4.txt", "projects/p/b/5.txt", "projects/p/b/6.txt",
		"projects/q/7.txt", "projects/q/8.txt", "projects/q/9.txt",
		"codex/skills/s1.md", "codex/skills/s2.md", "codex/skills/s3.md",
	}, nil)
	ctx := context.Background()
	f.Add("")
	f.Add("not a cursor")
	for _, src := range []struct {
		ws  davfs.Workspace
		dir string
	}{{sectree.Project("p"), "a"}, {sectree.Project("p"), "b"}, {sectree.Project("q"), ""}, {sectree.Global, "skills"}} {
		if pg, err := e.FS.ListEntries(ctx, src.ws, src.dir, 1, ""); err == nil && pg.NextCursor != "" {
			f.Add(pg.NextCursor)
			f.Add(pg.NextCursor[:len(pg.NextCursor)/2])
			f.Add(pg.NextCursor + "A")
		}
	}
	if pp, err := e.FS.ListProjects(ctx, 1, ""); err == nil && pp.NextCursor != "" {
		f.Add(pp.NextCursor)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		pg, err := e.FS.ListEntries(ctx, sectree.Project("p"), "a", 2, cursor)
		sectree.CheckDavErr(t, "ListEntries", err, e.Base)
		for _, en := range pg.Entries {
			if !strings.HasPrefix(en.Path, "a/") {
				t.Errorf("cursor %q made ListEntries(p, a) return %q", cursor, en.Path)
			}
		}
		pp, err := e.FS.ListProjects(ctx, 2, cursor)
		sectree.CheckDavErr(t, "ListProjects", err, e.Base)
		for _, p := range pp.Projects {
			if p.Name != "p" && p.Name != "q" {
				t.Errorf("cursor %q made ListProjects return %q", cursor, p.Name)
			}
		}
	})
}
