package dav_test

// Shared helpers of the adversarial suites over davfs and its WebDAV
// adapter (security_test.go, race_test.go, fuzz_test.go, fs_keep_test.go),
// the same fixtures as davfs's helpers_sec_test.go. Every identifier starts
// with "sec" so these files can live beside the other dav_test files.
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
//	"a/b"           regular file (content derived from the path, see secContent)
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
// "secret". Its content starts with secSecretMark, so a leak is detectable in
// any returned byte slice.

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint"
	"golang.org/x/sys/unix"
)

const secSecretMark = "SECRET:"

// secDenied is the denylist given to davfs in these suites. ".git" is
// deliberately absent: davfs must force it in.
var secDenied = []string{"node_modules", "vendor", ".hg"}

// secForbiddenNames are names no listing may ever show.
var secForbiddenNames = map[string]bool{".git": true, "node_modules": true, "vendor": true, ".hg": true}

// secKnownCodes are the codes davfs may return.
var secKnownCodes = map[davfs.Code]bool{
	davfs.CodeInvalidArgument: true, davfs.CodeNotFound: true, davfs.CodeAlreadyExists: true,
	davfs.CodePermissionDenied: true, davfs.CodeResourceExhausted: true, davfs.CodeFailedPrecondition: true,
	davfs.CodeAborted: true, davfs.CodeInternal: true, davfs.CodeUnavailable: true,
}

// secBaseLayout is present in every tree.
var secBaseLayout = []string{
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

func secIsSecret(rel string) bool {
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

// secContent is the content a layout gives the file at rel (relative to base).
func secContent(rel string) []byte {
	if secIsSecret(rel) {
		return []byte(secSecretMark + rel + "\n")
	}
	return []byte("content of " + rel + "\n")
}

// secBuild creates layout lines under base.
func secBuild(tb testing.TB, base string, layout []string) {
	tb.Helper()
	for _, line := range layout {
		switch {
		case strings.HasPrefix(line, "-"):
			if err := os.RemoveAll(filepath.Join(base, line[1:])); err != nil {
				tb.Fatal(err)
			}
		case strings.Contains(line, " @"):
			name, src, _ := strings.Cut(line, " @")
			secMount(tb, filepath.Join(base, name), strings.TrimSpace(src), base)
		case strings.Contains(line, " => "):
			name, target, _ := strings.Cut(line, " => ")
			if strings.HasPrefix(target, "/") {
				target = filepath.Join(base, target)
			}
			secMkParent(tb, base, name)
			if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
				tb.Fatal(err)
			}
		case strings.Contains(line, " == "):
			name, target, _ := strings.Cut(line, " == ")
			secMkParent(tb, base, name)
			if err := os.Link(filepath.Join(base, target), filepath.Join(base, name)); err != nil {
				tb.Fatal(err)
			}
		case strings.HasSuffix(line, " |"):
			name := strings.TrimSuffix(line, " |")
			secMkParent(tb, base, name)
			if err := syscall.Mkfifo(filepath.Join(base, name), 0o644); err != nil {
				tb.Fatal(err)
			}
		case strings.HasSuffix(line, "/"):
			if err := os.MkdirAll(filepath.Join(base, line), 0o755); err != nil {
				tb.Fatal(err)
			}
		default:
			secMkParent(tb, base, line)
			if err := os.WriteFile(filepath.Join(base, line), secContent(line), 0o644); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// secMount mounts a tmpfs (src "tmpfs") or bind-mounts base/src at dir and
// unmounts it in Cleanup (before the temp dir is removed).
func secMount(tb testing.TB, dir, src, base string) {
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

func secMkParent(tb testing.TB, base, name string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(base, name)), 0o755); err != nil {
		tb.Fatal(err)
	}
}

// secEnv is one tree plus an FS opened over it.
type secEnv struct {
	base string
	fs   *davfs.FS
	ck   *checkpoint.Store // beside fs (off unless the test configures it)
}

// ckConfig is what a test adjusts: the core's config and the checkpoint
// store's, opened together as the sidecar does.
type ckConfig struct {
	*davfs.Config
	Checkpoints *checkpoint.Config
	Options     *checkpoint.Options // Logger and Now default to the core's
}

func (e *secEnv) projects() string { return filepath.Join(e.base, "projects") }
func (e *secEnv) codex() string    { return filepath.Join(e.base, "codex") }

// secNewEnv builds base layout + layout in a fresh temp dir and opens davfs
// over it. tweak may adjust the Config (DisableOpenat2 ...).
func secNewEnv(tb testing.TB, base string, layout []string, tweak func(*davfs.Config)) *secEnv {
	tb.Helper()
	return secNewEnvWith(tb, base, layout, func(c ckConfig) {
		if tweak != nil {
			tweak(c.Config)
		}
	})
}

// secNewEnvWith is secNewEnv with the checkpoint store configured too.
func secNewEnvWith(tb testing.TB, base string, layout []string, tweak func(ckConfig)) *secEnv {
	tb.Helper()
	if base == "" {
		base = tb.TempDir()
	}
	secBuild(tb, base, secBaseLayout)
	secBuild(tb, base, layout)
	cfg := secConfig(base)
	var ckCfg checkpoint.Config
	var ckOpts checkpoint.Options
	tweak(ckConfig{&cfg, &ckCfg, &ckOpts})
	ckOpts.Logger, ckOpts.Now = cmp.Or(ckOpts.Logger, cfg.Logger), cfg.Now
	if n := checkpoint.DeniedName(ckCfg.Dir, cfg.ProjectsRoot); n != "" {
		cfg.DeniedNames = append(cfg.DeniedNames, n)
	}
	f, err := secOpen(cfg)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = secClose(f) })
	ck, err := checkpoint.New(f, ckCfg, ckOpts)
	if err != nil {
		tb.Fatalf("checkpoint.New: %v", err)
	}
	tb.Cleanup(ck.Close)
	return &secEnv{base: base, fs: f, ck: ck}
}

func secConfig(base string) davfs.Config {
	return davfs.Config{
		ProjectsRoot: filepath.Join(base, "projects"),
		CodexHome:    filepath.Join(base, "codex"),
		DeniedNames:  append([]string(nil), secDenied...),
	}
}

// secOpen calls davfs.Open, turning a panic (a stub) into an error.
func secOpen(cfg davfs.Config) (f *davfs.FS, err error) {
	defer secRecover(&err)
	return davfs.Open(cfg)
}

func secClose(f *davfs.FS) (err error) {
	defer secRecover(&err)
	return f.Close()
}

// secPanic marks an error that is really a recovered panic.
type secPanic struct{ v any }

func (p secPanic) Error() string { return fmt.Sprintf("panic: %v", p.v) }

func secRecover(err *error) {
	if r := recover(); r != nil {
		*err = secPanic{r}
	}
}

func secIsPanic(err error) bool {
	var p secPanic
	return errors.As(err, &p)
}

// secTry runs fn, converting a panic into a secPanic error.
func secTry(fn func() error) (err error) {
	defer secRecover(&err)
	return fn()
}

// secWithTimeout runs fn and fails tb if it does not return within d (a
// request hanging on a FIFO, a lock leak...). unblock is called on timeout
// so the goroutine can finish.
func secWithTimeout(tb testing.TB, d time.Duration, unblock func(), fn func() error) error {
	tb.Helper()
	done := make(chan error, 1)
	go func() { done <- secTry(fn) }()
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

// secCheckDavErr asserts err is a *davfs.Error with a known code and a safe
// message (no absolute host path, no secret content).
func secCheckDavErr(tb testing.TB, what string, err error, base string) {
	tb.Helper()
	if err == nil {
		return
	}
	if secIsPanic(err) {
		tb.Errorf("%s: %v", what, err)
		return
	}
	var de *davfs.Error
	if !errors.As(err, &de) {
		tb.Errorf("%s: error %T %q is not a *davfs.Error", what, err, err)
		return
	}
	if !secKnownCodes[de.Code] {
		tb.Errorf("%s: unknown code %v (reason %s)", what, de.Code, de.Reason)
	}
	if de.Reason == "" {
		tb.Errorf("%s: empty reason (code %v)", what, de.Code)
	}
	secCheckMessage(tb, what, err.Error(), base)
}

// secCheckMessage asserts a client-visible message holds no host path and no
// secret content.
func secCheckMessage(tb testing.TB, what, msg, base string) {
	tb.Helper()
	if base != "" && strings.Contains(msg, base) {
		tb.Errorf("%s: message leaks an absolute host path: %q", what, msg)
	}
	if strings.Contains(msg, secSecretMark) {
		tb.Errorf("%s: message leaks secret content: %q", what, msg)
	}
}

// secNode is one snapshot record.
type secNode struct {
	typ  string
	mode fs.FileMode
	size int64
	sum  [32]byte
	link string
}

func (n secNode) String() string {
	return fmt.Sprintf("%s %v size=%d sha=%x link=%q", n.typ, n.mode, n.size, n.sum[:6], n.link)
}

// secSnapshot records every name under root without following symlinks:
// type, mode, size, sha256 of regular files, link target.
func secSnapshot(tb testing.TB, root string) map[string]secNode {
	tb.Helper()
	out := map[string]secNode{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		n := secNode{mode: info.Mode()}
		switch {
		case info.Mode().IsRegular():
			n.typ, n.size = "file", info.Size()
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n.sum = sha256.Sum256(b)
		case info.IsDir():
			n.typ = "dir"
		case info.Mode()&fs.ModeSymlink != 0:
			n.typ = "symlink"
			n.link, _ = os.Readlink(p)
		default:
			n.typ = "special"
		}
		out[filepath.ToSlash(rel)] = n
		return nil
	})
	if err != nil {
		tb.Fatalf("snapshot %s: %v", filepath.Base(root), err)
	}
	return out
}

// secDiff lists differences between two snapshots, ignoring names for which
// skip returns true (nil: none).
func secDiff(before, after map[string]secNode, skip func(string) bool) []string {
	var diffs []string
	for k, b := range before {
		if skip != nil && skip(k) {
			continue
		}
		a, ok := after[k]
		switch {
		case !ok:
			diffs = append(diffs, "removed "+k+" ("+b.String()+")")
		case a != b:
			diffs = append(diffs, "changed "+k+": "+b.String()+" -> "+a.String())
		}
	}
	for k, a := range after {
		if skip != nil && skip(k) {
			continue
		}
		if _, ok := before[k]; !ok {
			diffs = append(diffs, "added "+k+" ("+a.String()+")")
		}
	}
	sort.Strings(diffs)
	return diffs
}

// secUnder reports whether rel is p or inside p (both "/"-separated).
func secUnder(rel, p string) bool {
	return rel == p || strings.HasPrefix(rel, p+"/")
}

// secNoSecret fails if b holds secret canary content.
func secNoSecret(tb testing.TB, what string, b []byte) {
	tb.Helper()
	if bytes.Contains(b, []byte(secSecretMark)) {
		tb.Errorf("%s returned canary content %q", what, secTrunc(b))
	}
}

func secTrunc(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// secListAll pages through ListEntries with a small page size.
func secListAll(ctx context.Context, f *davfs.FS, ws davfs.Workspace, dir string) ([]davfs.Entry, error) {
	var all []davfs.Entry
	cursor := ""
	for i := 0; i < 10000; i++ {
		var page davfs.Page
		err := secTry(func() (err error) {
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

// secReadAllFile reads and closes an *os.File returned by OpenRead.
func secReadAllFile(f *os.File) ([]byte, error) {
	defer f.Close()
	return io.ReadAll(f)
}

// secProject and secGlobal are the two workspaces of the suites.
func secProject(name string) davfs.Workspace {
	return davfs.Workspace{Scope: davfs.ScopeProject, Project: name}
}

var secGlobal = davfs.Workspace{Scope: davfs.ScopeGlobal}

// secRev returns p's revision when Stat succeeds, else a bogus one: the
// path error must win over a revision mismatch.
func secRev(ctx context.Context, e *secEnv, ws davfs.Workspace, p string) string {
	var ent davfs.Entry
	if err := secTry(func() (err error) { ent, err = e.fs.Stat(ctx, ws, p); return err }); err == nil {
		return ent.Revision
	}
	return "bogus-revision"
}
