// Package sectree builds the adversarial trees the security, race, fuzz
// and checkpoint suites of davfs and of the sidecar's WebDAV adapter run
// against, and checks what davfs answers over them (no host path, no
// canary content, a known error class). It is test support: only tests
// import it.
//
// A test tree ("base", always a fresh temp dir) has three parts:
//
//	base/projects  the projects root handed to davfs
//	base/codex     CODEX_HOME handed to davfs (skills/, AGENTS.md, secrets)
//	base/outside   canaries outside both roots
//
// Layout lines (the os.Root root_test.go notation):
//
//	"a/b/"          directory
//	"a/b"           regular file (content derived from the path, see Content)
//	"a => target"   symlink; a target starting with "/" is made absolute under base
//	"a == b"        hard link: a becomes another name of base/b
//	"a |"           FIFO
//	"a @tmpfs"      a small tmpfs mounted at a (needs root; unmounted in Cleanup)
//	"a @ b"         base/b bind-mounted at a (needs root; unmounted in Cleanup)
//	"-a"            remove a (to replace something the base layout made)
//
// A file is a canary ("secret") when davfs must never return or change it
// through the path under test: everything under outside/, every CODEX_HOME
// name outside skills/ and AGENTS.md, and any file whose name contains
// "secret". Its content starts with SecretMark, so a leak is detectable in
// any returned byte slice.
package sectree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/testtree"
	"golang.org/x/sys/unix"
)

// SecretMark starts the content of every canary file.
const SecretMark = "SECRET:"

// Denied is the denylist given to davfs in these suites. ".git" is
// deliberately absent: davfs must force it in.
var Denied = []string{"node_modules", "vendor", ".hg"}

// ForbiddenNames are names no listing may ever show.
var ForbiddenNames = map[string]bool{".git": true, "node_modules": true, "vendor": true, ".hg": true}

// KnownCodes are the codes davfs may return.
var KnownCodes = map[davfs.Code]bool{
	davfs.CodeInvalidArgument: true, davfs.CodeNotFound: true, davfs.CodeAlreadyExists: true,
	davfs.CodePermissionDenied: true, davfs.CodeResourceExhausted: true, davfs.CodeFailedPrecondition: true,
	davfs.CodeAborted: true, davfs.CodeInternal: true, davfs.CodeUnavailable: true,
}

// BaseLayout is present in every tree.
var BaseLayout = []string{
	"projects/p/ok.txt",
	"projects/p/okdir/",
	"projects/p/okdir/inner.txt",
	"projects/q/secret.txt",
	"codex/skills/ok.md",
	"codex/AGENTS.md",
	"codex/auth.json",
	"codex/config.toml",
	"outside/canary.txt",
	"outside/dir/canary.txt",
}

// IsSecret reports whether the file at rel (relative to base) is a canary.
func IsSecret(rel string) bool {
	switch {
	case strings.HasPrefix(rel, "outside/"):
		return true
	case strings.Contains(path.Base(rel), "secret"):
		return true
	case strings.HasPrefix(rel, "codex/"):
		return !strings.HasPrefix(rel, "codex/skills/") && rel != "codex/AGENTS.md"
	}
	return false
}

// Content is the content a layout gives the file at rel (relative to base).
func Content(rel string) []byte {
	if IsSecret(rel) {
		return []byte(SecretMark + rel + "\n")
	}
	return []byte("content of " + rel + "\n")
}

// Build creates layout lines under base.
func Build(tb testing.TB, base string, layout []string) {
	tb.Helper()
	for _, line := range layout {
		switch {
		case strings.HasPrefix(line, "-"):
			if err := os.RemoveAll(filepath.Join(base, line[1:])); err != nil {
				tb.Fatal(err)
			}
		case strings.Contains(line, " @"):
			name, src, _ := strings.Cut(line, " @")
			Mount(tb, filepath.Join(base, name), strings.TrimSpace(src), base)
		case strings.Contains(line, " => "):
			name, target, _ := strings.Cut(line, " => ")
			if strings.HasPrefix(target, "/") {
				target = filepath.Join(base, target)
			}
			MkParent(tb, base, name)
			if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
				tb.Fatal(err)
			}
		case strings.Contains(line, " == "):
			name, target, _ := strings.Cut(line, " == ")
			MkParent(tb, base, name)
			if err := os.Link(filepath.Join(base, target), filepath.Join(base, name)); err != nil {
				tb.Fatal(err)
			}
		case strings.HasSuffix(line, " |"):
			name := strings.TrimSuffix(line, " |")
			MkParent(tb, base, name)
			if err := syscall.Mkfifo(filepath.Join(base, name), 0o644); err != nil {
				tb.Fatal(err)
			}
		case strings.HasSuffix(line, "/"):
			if err := os.MkdirAll(filepath.Join(base, line), 0o755); err != nil {
				tb.Fatal(err)
			}
		default:
			MkParent(tb, base, line)
			if err := os.WriteFile(filepath.Join(base, line), Content(line), 0o644); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// Mount mounts a tmpfs (src "tmpfs") or bind-mounts base/src at dir and
// unmounts it in Cleanup (before the temp dir is removed).
func Mount(tb testing.TB, dir, src, base string) {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	var err error
	if src == "tmpfs" {
		err = unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0755")
	} else {
		err = unix.Mount(filepath.Join(base, src), dir, "", unix.MS_BIND, "")
	}
	if err != nil {
		tb.Fatalf("mount at %s: %v (mount-point layouts need root or CAP_SYS_ADMIN; run `go test` as root)", filepath.Base(dir), err)
	}
	tb.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			_ = unix.Unmount(dir, unix.MNT_DETACH)
		}
	})
}

// MkParent creates the parent directories of base/name.
func MkParent(tb testing.TB, base, name string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(base, name)), 0o755); err != nil {
		tb.Fatal(err)
	}
}

// Env is one tree plus an FS opened over it.
type Env struct {
	Base string
	FS   *davfs.FS
}

// Projects and Codex are the two roots handed to davfs.
func (e *Env) Projects() string { return filepath.Join(e.Base, "projects") }
func (e *Env) Codex() string    { return filepath.Join(e.Base, "codex") }

// NewEnv builds base layout + layout in a fresh temp dir and opens davfs
// over it. tweak may adjust the Config (DisableOpenat2 ...).
func NewEnv(tb testing.TB, base string, layout []string, tweak func(*davfs.Config)) *Env {
	tb.Helper()
	if base == "" {
		base = tb.TempDir()
	}
	Build(tb, base, BaseLayout)
	Build(tb, base, layout)
	cfg := Config(base)
	if tweak != nil {
		tweak(&cfg)
	}
	f, err := Open(cfg)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = Close(f) })
	return &Env{Base: base, FS: f}
}

// Config is the davfs Config of a tree at base.
func Config(base string) davfs.Config {
	return davfs.Config{
		ProjectsRoot: filepath.Join(base, "projects"),
		CodexHome:    filepath.Join(base, "codex"),
		DeniedNames:  append([]string(nil), Denied...),
	}
}

// Open calls davfs.Open, turning a panic (a stub) into an error.
func Open(cfg davfs.Config) (f *davfs.FS, err error) {
	defer Recover(&err)
	return davfs.Open(cfg)
}

// Close closes f, turning a panic into an error.
func Close(f *davfs.FS) (err error) {
	defer Recover(&err)
	return f.Close()
}

// Panic marks an error that is really a recovered panic.
type Panic struct{ V any }

func (p Panic) Error() string { return fmt.Sprintf("panic: %v", p.V) }

// Recover, deferred, turns a panic into a Panic error in *err.
func Recover(err *error) {
	if r := recover(); r != nil {
		*err = Panic{r}
	}
}

// IsPanic reports whether err is a recovered panic.
func IsPanic(err error) bool {
	var p Panic
	return errors.As(err, &p)
}

// Try runs fn, converting a panic into a Panic error.
func Try(fn func() error) (err error) {
	defer Recover(&err)
	return fn()
}

// WithTimeout runs fn and fails tb if it does not return within d (a
// request hanging on a FIFO, a lock leak...). unblock is called on timeout
// so the goroutine can finish.
func WithTimeout(tb testing.TB, d time.Duration, unblock func(), fn func() error) error {
	tb.Helper()
	done := make(chan error, 1)
	go func() { done <- Try(fn) }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		tb.Errorf("operation did not return within %v (hang)", d)
		if unblock != nil {
			unblock()
		}
		return <-done
	}
}

// CheckDavErr asserts err is a *davfs.Error with a known code and a safe
// message (no absolute host path, no secret content).
func CheckDavErr(tb testing.TB, what string, err error, base string) {
	tb.Helper()
	if err == nil {
		return
	}
	if IsPanic(err) {
		tb.Errorf("%s: %v", what, err)
		return
	}
	var de *davfs.Error
	if !errors.As(err, &de) {
		tb.Errorf("%s: error %T %q is not a *davfs.Error", what, err, err)
		return
	}
	if !KnownCodes[de.Code] {
		tb.Errorf("%s: unknown code %v (reason %s)", what, de.Code, de.Reason)
	}
	if de.Reason == "" {
		tb.Errorf("%s: empty reason (code %v)", what, de.Code)
	}
	CheckMessage(tb, what, err.Error(), base)
}

// CheckMessage asserts a client-visible message holds no host path and no
// secret content.
func CheckMessage(tb testing.TB, what, msg, base string) {
	tb.Helper()
	if base != "" && strings.Contains(msg, base) {
		tb.Errorf("%s: message leaks an absolute host path: %q", what, msg)
	}
	if strings.Contains(msg, SecretMark) {
		tb.Errorf("%s: message leaks secret content: %q", what, msg)
	}
}

// Node is one snapshot record: testtree's, with modes.
type Node = testtree.Entry

// Snapshot records every name under root without following symlinks:
// type, mode, size, sha256 of regular files, link target.
func Snapshot(tb testing.TB, root string) map[string]Node {
	tb.Helper()
	return testtree.Snap(tb, root, testtree.Modes())
}

// Diff lists differences between two snapshots, ignoring names for which
// skip returns true (nil: none).
func Diff(before, after map[string]Node, skip func(string) bool) []string {
	keep := func(m map[string]Node) testtree.Snapshot {
		out := testtree.Snapshot{}
		for k, n := range m {
			if skip == nil || !skip(k) {
				out[k] = n
			}
		}
		return out
	}
	return testtree.Diff(keep(before), keep(after))
}

// Under reports whether rel is p or inside p (both "/"-separated).
func Under(rel, p string) bool {
	return rel == p || strings.HasPrefix(rel, p+"/")
}

// NoSecret fails if b holds secret canary content.
func NoSecret(tb testing.TB, what string, b []byte) {
	tb.Helper()
	if bytes.Contains(b, []byte(SecretMark)) {
		tb.Errorf("%s returned canary content %q", what, Trunc(b))
	}
}

// Trunc shortens b for a failure message.
func Trunc(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// ListAll pages through ListEntries with a small page size.
func ListAll(ctx context.Context, f *davfs.FS, ws davfs.Workspace, dir string) ([]davfs.Entry, error) {
	var all []davfs.Entry
	cursor := ""
	for i := 0; i < 10000; i++ {
		var page davfs.Page
		err := Try(func() (err error) {
			page, err = f.ListEntries(ctx, ws, dir, 7, cursor)
			return err
		})
		if err != nil {
			return all, err
		}
		all = append(all, page.Entries...)
		if page.NextCursor == "" {
			return all, nil
		}
		cursor = page.NextCursor
	}
	return all, errors.New("ListEntries: cursor never ends")
}

// ReadAllFile reads and closes an *os.File returned by OpenRead.
func ReadAllFile(f *os.File) ([]byte, error) {
	defer f.Close()
	return io.ReadAll(f)
}

// Project and Global are the two workspaces of the suites.
func Project(name string) davfs.Workspace {
	return davfs.Workspace{Scope: davfs.ScopeProject, Project: name}
}

var Global = davfs.Workspace{Scope: davfs.ScopeGlobal}

// Rev returns p's revision when Stat succeeds, else a bogus one: the
// path error must win over a revision mismatch.
func Rev(ctx context.Context, e *Env, ws davfs.Workspace, p string) string {
	var ent davfs.Entry
	if err := Try(func() (err error) { ent, err = e.FS.Stat(ctx, ws, p); return err }); err == nil {
		return ent.Revision
	}
	return "bogus-revision"
}

// HostRel maps a workspace path to its name relative to base.
func HostRel(ws davfs.Workspace, p string) string {
	if ws.Scope == davfs.ScopeGlobal {
		return path.Join("codex", p)
	}
	return path.Join("projects", ws.Project, p)
}

// UnblockFIFOs opens every FIFO of the layout read-write (never blocks on
// Linux), which releases a request stuck opening it.
func UnblockFIFOs(base string, layout []string) {
	for _, l := range layout {
		if name, ok := strings.CutSuffix(l, " |"); ok {
			if f, err := os.OpenFile(filepath.Join(base, name), os.O_RDWR, 0); err == nil {
				_ = f.Close()
			}
		}
	}
}

// Modes runs fn with openat2 and with the O_NOFOLLOW fallback walk.
func Modes(t *testing.T, fn func(t *testing.T, tweak func(*davfs.Config))) {
	for _, m := range []struct {
		name    string
		disable bool
	}{{"openat2", false}, {"fallback", true}} {
		t.Run(m.name, func(t *testing.T) {
			fn(t, func(c *davfs.Config) { c.DisableOpenat2 = m.disable })
		})
	}
}

// Poll returns what done holds, or nil when it holds nothing yet.
func Poll(done chan error) error {
	select {
	case err := <-done:
		return err
	default:
		return nil
	}
}

// DirNames lists the names in the host directory dir.
func DirNames(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range des {
		out = append(out, d.Name())
	}
	return out
}
