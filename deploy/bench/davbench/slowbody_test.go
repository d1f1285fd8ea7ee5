package main

import (
	"io"
	"runtime"
	"testing"
	"time"
)

// The slow upload is paced in steps of one transport read (32 KiB), not in
// bigger bursts, carries exactly size bytes, and takes the paced time.
func TestSlowBodyPacing(t *testing.T) {
	const size, bps = 200 << 10, 2 << 20 // 6 full steps and 8 KiB, about 94 ms
	r := slowBody(size, bps)
	buf := make([]byte, 64<<10)
	start := time.Now()
	var got int64
	for {
		n, err := r.Read(buf)
		if n > 32<<10 {
			t.Fatalf("a read of %d bytes: steps are 32 KiB", n)
		}
		got += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if got != size {
		t.Fatalf("%d bytes, want %d", got, size)
	}
	// The last step is due after 192 KiB at 2 MiB/s: 93.75 ms.
	if d := time.Since(start); d < 90*time.Millisecond {
		t.Fatalf("done after %s, want >= 93 ms", d)
	}
}

// A request that ends early closes its body: the pacing goroutine ends.
func TestSlowBodyClosedEarly(t *testing.T) {
	before := runtime.NumGoroutine()
	r := slowBody(64<<20, 1<<20)
	if _, err := io.ReadFull(r, make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	r.(io.Closer).Close()
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, %d before: the pacing goroutine did not end", runtime.NumGoroutine(), before)
		}
	}
}
