package davfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenReadFastPath: with openat2, OpenRead of a plain file takes the
// one-openat2 path; every refused kind (symlinked file or directory on the
// path, FIFO, hard link, directory, missing) falls back to openFile and
// reports exactly what openFile reports.
func TestOpenReadFastPath(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.write("projects/p/d/a.txt", "hello\n")
		e.symlink("projects/p/d", "projects/p/ld")
		e.symlink("outside/canary.txt", "projects/p/d/l.txt")
		e.symlink("outside", "projects/p/out")
		e.write("projects/p/d/h.txt", "x")
		must(t, unix.Link(e.dir+"/projects/p/d/h.txt", e.dir+"/projects/p/d/h2.txt"))
		must(t, unix.Mkfifo(e.dir+"/projects/p/d/fifo", 0o644))
		w, err := e.fs.resolve(proj("p"), "d/a.txt")
		must(t, err)
		fd, st, ok := e.fs.openFileFast(w)
		if ok != e.fs.useOpenat2 {
			t.Fatalf("fast path taken: %v, openat2: %v", ok, e.fs.useOpenat2)
		}
		if ok {
			if st.Size != 6 {
				t.Fatalf("size %d", st.Size)
			}
			unix.Close(fd)
		}
		for _, p := range []string{"d/a.txt", "ld/a.txt", "d/l.txt", "out/canary.txt", "d/h.txt", "d/fifo", "d", "d/missing", "missing/x"} {
			w, err := e.fs.resolve(proj("p"), p)
			must(t, err)
			if fd, _, ok := e.fs.openFileFast(w); ok {
				unix.Close(fd)
				if p != "d/a.txt" {
					t.Fatalf("%s: fast path accepted it", p)
				}
			}
			f, _, err := e.fs.OpenRead(bg, proj("p"), p)
			wfd, _, werr := e.fs.openFile(w)
			if werr == nil {
				unix.Close(wfd)
			}
			if f != nil {
				b := make([]byte, 16)
				n, _ := f.Read(b)
				if strings.Contains(string(b[:n]), "CANARY") {
					t.Fatalf("%s: read the canary", p)
				}
				f.Close()
			}
			if (err == nil) != (werr == nil) || CodeOf(err) != CodeOf(werr) || ReasonOf(err) != ReasonOf(werr) {
				t.Fatalf("%s: OpenRead %v, openFile %v", p, err, werr)
			}
		}
		e.checkCanaries()
	})
}

// BenchmarkOpenRead1KiB: the open part of OpenRead for a small file (what
// a WebDAV GET costs in davfs): the one-openat2 path vs openFile.
func BenchmarkOpenRead1KiB(b *testing.B) {
	dir := b.TempDir()
	for _, d := range []string{"projects/p/d", "codex"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "projects/p/d/f.txt"), make([]byte, 1024), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := Open(Config{ProjectsRoot: filepath.Join(dir, "projects"), CodexHome: filepath.Join(dir, "codex")})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w, err := f.resolve(proj("p"), "d/f.txt")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			fd, _, ok := f.openFileFast(w)
			if !ok {
				b.Fatal("fast path refused")
			}
			unix.Close(fd)
		}
	})
	b.Run("openFile", func(b *testing.B) {
		for b.Loop() {
			fd, _, err := f.openFile(w)
			if err != nil {
				b.Fatal(err)
			}
			unix.Close(fd)
		}
	})
	b.Run("OpenRead", func(b *testing.B) {
		for b.Loop() {
			osf, _, err := f.OpenRead(bg, proj("p"), "d/f.txt")
			if err != nil {
				b.Fatal(err)
			}
			osf.Close()
		}
	})
}
