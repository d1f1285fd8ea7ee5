package davfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A restore's object check tells damage apart from a store that could not
// be read just now, and stops with its context.
func TestTransientErrno(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{unix.EMFILE, true},
		{fmt.Errorf("open: %w", unix.ENFILE), true},
		{unix.ENOMEM, true},
		{unix.ENOENT, false},
		{unix.ELOOP, false},
		{unix.EIO, false},
		{errors.New("object hash differs"), false},
	} {
		if got := transientErrno(tc.err); got != tc.want {
			t.Errorf("transientErrno(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestCtxReaderStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := ctxReader{ctx, strings.NewReader(strings.Repeat("x", 1<<20))}
	buf := make([]byte, 1024)
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.ReadAll(r); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after cancel: %v, want context.Canceled", err)
	}
}
