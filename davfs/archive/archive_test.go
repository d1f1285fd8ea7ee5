package archive_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/archive"
	"github.com/agentworkspace/files/internal/testtree"
)

// tree is a projects root with project p (its files and the adversarial
// names beside them) and a canary outside it.
func tree(t *testing.T, walk bool) (*davfs.FS, string, string) {
	t.Helper()
	base := t.TempDir()
	projects, codex, out := filepath.Join(base, "projects"), filepath.Join(base, "codex"), filepath.Join(base, "outside")
	for rel, c := range map[string]string{
		"projects/p/a.txt": "a\n", "projects/p/sub/b.txt": "b\n", "projects/p/.git/HEAD": "ref\n",
		"projects/p/build/x": "denied\n", "projects/p/bad\xff": "not UTF-8\n", "outside/canary": "canary\n",
		"codex/AGENTS.md": "agents\n", "codex/skills/s/SKILL.md": "skill\n", "codex/config.toml": "secret\n",
	} {
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range []error{
		os.Symlink(filepath.Join(out, "canary"), filepath.Join(projects, "p/link")),
		os.Symlink(out, filepath.Join(projects, "p/sub/dirlink")),
		os.Link(filepath.Join(out, "canary"), filepath.Join(projects, "p/hard")),
		syscall.Mkfifo(filepath.Join(projects, "p/fifo"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	fs, err := davfs.Open(davfs.Config{ProjectsRoot: projects, CodexHome: codex, DeniedNames: davfs.DefaultDeniedNames(), DisableOpenat2: walk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return fs, base, out
}

func entries(t *testing.T, b []byte) (string, *zip.Reader) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		rc.Close()
		names = append(names, f.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ","), zr
}

func TestArchiveLeavesOutWhatACheckpointDoes(t *testing.T) {
	for _, walk := range []bool{false, true} {
		fs, base, _ := tree(t, walk)
		before := testtree.Snap(t, base, testtree.Modes(), testtree.MTimes())
		tg, err := fs.Resolve(davfs.Workspace{Scope: davfs.ScopeProject, Project: "p"}, "")
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		st, err := archive.Write(context.Background(), fs, tg, &buf, archive.Options{})
		if err != nil {
			t.Fatal(err)
		}
		names, zr := entries(t, buf.Bytes())
		if names != "p/,p/a.txt,p/sub/,p/sub/b.txt" {
			t.Errorf("O_NOFOLLOW walk %v: entries %s", walk, names)
		}
		// .git, build, the name that is not UTF-8, link, dirlink, hard, fifo
		if st.Skipped != 7 || st.Files != 2 || st.Dirs != 2 || !strings.Contains(zr.Comment, "7 names left out") {
			t.Errorf("stats %+v, comment %q", st, zr.Comment)
		}
		testtree.Same(t, "after an archive", before, testtree.Snap(t, base, testtree.Modes(), testtree.MTimes()))
	}
}

func TestArchiveGlobalAndRefusals(t *testing.T) {
	fs, _, _ := tree(t, false)
	g, _ := fs.Resolve(davfs.Workspace{Scope: davfs.ScopeGlobal}, "")
	var buf bytes.Buffer
	if _, err := archive.Write(context.Background(), fs, g, &buf, archive.Options{Store: true}); err != nil {
		t.Fatal(err)
	}
	if names, _ := entries(t, buf.Bytes()); names != "global/,global/AGENTS.md,global/skills/,global/skills/s/,global/skills/s/SKILL.md" {
		t.Errorf("GLOBAL entries %s", names)
	}
	ws := davfs.Workspace{Scope: davfs.ScopeProject, Project: "p"}
	for path, reason := range map[string]davfs.Reason{
		"a.txt": davfs.ReasonNotADirectory, "link": davfs.ReasonSymlink, "sub/dirlink": davfs.ReasonSymlink,
		"missing": davfs.ReasonNotFound,
	} {
		tg, err := fs.Resolve(ws, path)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		_, err = archive.Write(context.Background(), fs, tg, &out, archive.Options{})
		var de *davfs.Error
		if !errors.As(err, &de) || de.Reason != reason || out.Len() != 0 {
			t.Errorf("%s: %v (%d bytes written), want %s and nothing written", path, err, out.Len(), reason)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tg, _ := fs.Resolve(ws, "")
	if _, err := archive.Write(ctx, fs, tg, io.Discard, archive.Options{}); err == nil {
		t.Error("a canceled archive succeeded")
	}
}
