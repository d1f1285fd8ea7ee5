package davfs

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSwapRace: one goroutine keeps swapping projects/p/d between a real
// directory and a symlink to outside/, while others read, write, move and
// delete through davfs. Nothing outside the root is read or changed, in
// both resolution modes.
func TestSwapRace(t *testing.T) {
	forModes(t, func(t *testing.T, e *env) {
		e.write("projects/p/real/f.txt", "inside")
		e.write("outside/f.txt", "CANARY-F")
		e.write("outside/sub/g.txt", "CANARY-G")
		d := filepath.Join(e.dir, "projects/p/d")
		real := filepath.Join(e.dir, "projects/p/real")
		out := filepath.Join(e.dir, "outside")
		var stop atomic.Bool
		var wg, swapper sync.WaitGroup
		swapper.Add(1)
		go func() {
			defer swapper.Done()
			for !stop.Load() {
				os.Rename(real, d) // d is the real directory
				for range 20 {
					runtime.Gosched() // let some operations see the real state
				}
				os.Rename(d, real) // gone
				os.Symlink(out, d) // d -> outside
				os.Remove(d)       // gone
			}
		}()
		var leaks, reads atomic.Int32
		check := func(b []byte) {
			if bytes.Contains(b, []byte("CANARY")) {
				leaks.Add(1)
			}
		}
		start := time.Now()
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 1500 || (reads.Load() < 20 && time.Since(start) < 10*time.Second); i++ {
					switch (i + w) % 6 {
					case 0:
						f, err := e.fs.ReadFile(bg, proj("p"), "d/f.txt")
						if err == nil {
							check(f.Content)
							reads.Add(1)
						}
					case 1:
						if st, err := e.fs.Stat(bg, proj("p"), "d/f.txt"); err == nil {
							e.fs.UpdateFile(bg, proj("p"), "d/f.txt", []byte("pwned"), st.Revision)
						}
					case 2:
						e.fs.WriteStream(bg, proj("p"), "d/sub/g.txt", strings.NewReader("pwned"), 0, Precondition{})
					case 3:
						if st, err := e.fs.Stat(bg, proj("p"), "d/sub"); err == nil {
							e.fs.DeleteEntry(bg, proj("p"), "d/sub", st.Revision, true)
						}
					case 4:
						if pg, err := e.fs.ListEntries(bg, proj("p"), "d", 0, ""); err == nil {
							for _, x := range pg.Entries {
								if x.Name == "sub" {
									leaks.Add(1)
								}
							}
						}
					case 5:
						if f, _, err := e.fs.OpenRead(bg, proj("p"), "d/f.txt"); err == nil {
							b := make([]byte, 64)
							n, _ := f.Read(b)
							check(b[:n])
							f.Close()
						}
						e.fs.CreateEntry(bg, proj("p"), "d", "new", TypeDirectory)
					}
				}
			}()
		}
		wg.Wait()
		stop.Store(true)
		swapper.Wait()
		if leaks.Load() > 0 {
			t.Fatal("content or names from outside the root leaked")
		}
		if reads.Load() == 0 {
			t.Fatal("no read ever succeeded: the race exercised nothing")
		}
		t.Logf("%d successful reads", reads.Load())
		if e.read("outside/f.txt") != "CANARY-F" || e.read("outside/sub/g.txt") != "CANARY-G" {
			t.Fatal("outside changed")
		}
		if e.exists("outside/new") {
			t.Fatal("created outside")
		}
		e.checkCanaries()
	})
}
