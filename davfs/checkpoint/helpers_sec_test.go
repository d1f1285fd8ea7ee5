package checkpoint

import (
	"bytes"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/testtree"
	"golang.org/x/sys/unix"
)

// The tree helpers of the checkpoint suites (the adversarial layouts of
// davfs's own suites: canaries, traps). Every identifier starts with "sec".
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

const secSecretMark = "SECRET:"

// secDenied is the denylist given to davfs in these suites. ".git" is
// deliberately absent: davfs must force it in.
var secDenied = []string{"node_modules", "vendor", ".hg"}

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
	fs   *testFS
}

func (e *secEnv) projects() string { return filepath.Join(e.base, "projects") }
func (e *secEnv) codex() string    { return filepath.Join(e.base, "codex") }

// secNewEnv builds base layout + layout in a fresh temp dir and opens davfs
// over it. tweak may adjust the Config (DisableOpenat2 ...).
func secNewEnv(tb testing.TB, base string, layout []string, tweak func(*testConfig)) *secEnv {
	tb.Helper()
	if base == "" {
		base = tb.TempDir()
	}
	secBuild(tb, base, secBaseLayout)
	secBuild(tb, base, layout)
	cfg := secConfig(base)
	if tweak != nil {
		tweak(&cfg)
	}
	f, err := openTest(cfg)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = f.Close() })
	return &secEnv{base: base, fs: f}
}

func secConfig(base string) testConfig {
	return testConfig{Config: davfs.Config{
		ProjectsRoot: filepath.Join(base, "projects"),
		CodexHome:    filepath.Join(base, "codex"),
		DeniedNames:  append([]string(nil), secDenied...),
	}}
}

// secCheckDavErr asserts err is a *davfs.Error with a known code and a safe
// message (no absolute host path, no secret content).
func secCheckDavErr(tb testing.TB, what string, err error, base string) {
	tb.Helper()
	if err == nil {
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

// secNode is one snapshot record (testtree's, with the mode).
type secNode = testtree.Entry

// secSnapshot records every name under root without following symlinks:
// type, mode, size, sha256 of regular files, link target.
func secSnapshot(tb testing.TB, root string) map[string]secNode {
	tb.Helper()
	return testtree.Snap(tb, root, testtree.Modes())
}

// secDiff lists differences between two snapshots.
func secDiff(before, after map[string]secNode) []string { return testtree.Diff(before, after) }

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

// secProject is a PROJECT workspace of the suites.
func secProject(name string) davfs.Workspace {
	return davfs.Workspace{Scope: davfs.ScopeProject, Project: name}
}
