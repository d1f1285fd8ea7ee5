package feature

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// fakeClock is a hand-driven clock: After hands each requested wait to the
// test (waits), which fires it when it chooses.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits chan fakeWait
}

type fakeWait struct {
	d time.Duration
	c chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), waits: make(chan fakeWait, 16)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.waits <- fakeWait{d, ch}
	return ch
}

// nextWait returns the next wait Run asked for.
func (c *fakeClock) nextWait(t *testing.T) fakeWait {
	t.Helper()
	select {
	case w := <-c.waits:
		return w
	case <-time.After(5 * time.Second):
		t.Fatal("Run asked for no wait")
		return fakeWait{}
	}
}

// attempt is one call of Start: when it happened; Start returns what the
// test sends on result.
type attempt struct {
	at     time.Time
	result chan error
}

type fixture struct {
	clock    *fakeClock
	attempts chan attempt
	log      *bytes.Buffer
	logMu    sync.Mutex
	changes  []bool
	mu       sync.Mutex
	f        *Feature
	done     chan struct{}
}

func newFixture(t *testing.T, minB, maxB time.Duration) *fixture {
	x := &fixture{clock: newFakeClock(), attempts: make(chan attempt), log: &bytes.Buffer{}, done: make(chan struct{})}
	x.f = New(Options{Name: "checkpoints", MinBackoff: minB, MaxBackoff: maxB, Now: x.clock.Now, After: x.clock.After,
		Logger: hclog.New(&hclog.LoggerOptions{Output: lockedWriter{&x.logMu, x.log}, JSONFormat: true}),
		Start: func() error {
			a := attempt{at: x.clock.Now(), result: make(chan error)}
			x.attempts <- a
			return <-a.result
		},
		OnChange: func(ok bool) { x.mu.Lock(); x.changes = append(x.changes, ok); x.mu.Unlock() }})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); <-x.done })
	go func() { defer close(x.done); x.f.Run(ctx) }()
	return x
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// logs is what was logged so far.
func (x *fixture) logs() string {
	x.logMu.Lock()
	defer x.logMu.Unlock()
	return x.log.String()
}

// waitLog waits until the log holds s.
func (x *fixture) waitLog(t *testing.T, s string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(x.logs(), s); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never held %q:\n%s", s, x.logs())
		}
	}
}

// answer waits for the next attempt and makes it return err.
func (x *fixture) answer(t *testing.T, err error) attempt {
	t.Helper()
	select {
	case a := <-x.attempts:
		a.result <- err
		return a
	case <-time.After(5 * time.Second):
		t.Fatal("no attempt")
		return attempt{}
	}
}

var errBroken = errors.New("the checkpoint store is not usable: it is a symbolic link")

// The backoff doubles from the minimum to the maximum between failed
// attempts; the first success ends Run. One log line and one OnChange per
// change of state, not per attempt.
func TestRunBacksOffUntilAvailable(t *testing.T) {
	x := newFixture(t, time.Second, 8*time.Second)
	x.answer(t, errBroken)
	var got []time.Duration
	for range 5 {
		w := x.clock.nextWait(t) // asked for once the attempt is recorded
		if err := x.f.Err(); !errors.Is(err, errBroken) {
			t.Fatalf("Err after a failed attempt = %v", err)
		}
		got = append(got, w.d)
		x.clock.advance(w.d)
		w.c <- x.clock.Now()
		x.answer(t, errBroken)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}
	if !slicesEqual(got, want) {
		t.Fatalf("waits = %v, want %v", got, want)
	}
	w := x.clock.nextWait(t)
	x.clock.advance(w.d)
	w.c <- x.clock.Now()
	x.answer(t, nil)
	<-x.done
	if err := x.f.Err(); err != nil {
		t.Fatalf("Err after success = %v", err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.changes) != 2 || x.changes[0] || !x.changes[1] {
		t.Fatalf("OnChange calls = %v, want [false true]", x.changes)
	}
	logs := x.logs()
	if n := strings.Count(logs, "feature unavailable"); n != 1 {
		t.Fatalf("%d unavailable lines for one change of state:\n%s", n, logs)
	}
	if n := strings.Count(logs, "feature available"); n != 1 || !strings.Contains(logs, "it is a symbolic link") {
		t.Fatalf("log does not state the changes and the reason:\n%s", logs)
	}
}

// A Kick brings an attempt forward, but never more than one per minimum
// backoff; a new reason is logged again.
func TestKickIsRateLimited(t *testing.T) {
	x := newFixture(t, time.Second, time.Minute)
	first := x.answer(t, errBroken)
	x.clock.nextWait(t) // the 1 s backoff, never fired here

	x.clock.advance(500 * time.Millisecond)
	x.f.Kick() // too soon: ignored
	x.clock.advance(time.Second)
	// The ignored kick made no attempt: the next one is the later kick's.
	deadline := time.After(5 * time.Second)
	for {
		x.f.Kick()
		select {
		case a := <-x.attempts:
			if got := a.at.Sub(first.at); got != 1500*time.Millisecond {
				t.Fatalf("kicked attempt %v after the first, want 1.5s (the early kick was not ignored)", got)
			}
			a.result <- errors.New("the checkpoint store is not usable: permission denied")
			x.waitLog(t, "permission denied") // a new reason is logged again
			return
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatal("a kick after the minimum backoff made no attempt")
		}
	}
}

// Before the first attempt the feature is not available.
func TestErrBeforeStart(t *testing.T) {
	f := New(Options{Name: "watch", Start: func() error { return nil }})
	if f.Err() == nil {
		t.Fatal("available before any attempt")
	}
	if err := f.Attempt(); err != nil || f.Err() != nil {
		t.Fatalf("after a successful attempt: %v, %v", err, f.Err())
	}
}

func slicesEqual(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A feature that starts at once is never retried: Run returns without
// asking for a wait.
func TestRunReturnsWhenAvailable(t *testing.T) {
	c := newFakeClock()
	n := 0
	f := New(Options{Name: "watch", Now: c.Now, After: c.After, Start: func() error { n++; return nil }})
	f.Run(context.Background())
	if n != 1 || len(c.waits) != 0 || f.Err() != nil {
		t.Fatalf("%d attempts, %d waits, Err %v", n, len(c.waits), f.Err())
	}
	f.Run(context.Background()) // again: no new attempt
	if n != 1 {
		t.Fatalf("%d attempts after a second Run", n)
	}
}
