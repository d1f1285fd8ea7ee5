package fdio

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// ParseDirentsShared gives the names and types ParseDirents gives, buffer
// by buffer, however the buffer falls (small buffers cut the listing into
// many reads).
func TestParseDirentsSharedMatches(t *testing.T) {
	dir := t.TempDir()
	var want []string
	for i := range 300 {
		n := fmt.Sprintf("f-%03d-%s", i, string(rune('a'+i%26)))
		if i%7 == 0 {
			n += ".longer-name-with-more-bytes"
		}
		want = append(want, n)
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	want = append(want, "sub")
	for _, size := range []int{512, 4096, 64 << 10} {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, size)
		var got []string
		for {
			n, err := unix.Getdents(fd, buf)
			if err != nil {
				t.Fatal(err)
			}
			if n <= 0 {
				break
			}
			a, b := ParseDirents(buf[:n], nil), ParseDirentsShared(buf[:n], nil)
			if !slices.Equal(a, b) {
				t.Fatalf("buffer of %d: shared %v; want %v", size, b, a)
			}
			clear(buf) // the shared names must not alias the buffer
			for i, d := range b {
				if d != a[i] {
					t.Fatalf("buffer of %d: %q changed with the buffer", size, a[i].Name)
				}
				got = append(got, d.Name)
			}
		}
		unix.Close(fd)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("buffer of %d: %d names; want %d", size, len(got), len(want))
		}
	}
}
