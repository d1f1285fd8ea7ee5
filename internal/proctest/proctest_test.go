package proctest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the child process: with PROCTEST_CHILD set it
// behaves as a small server in the mode named by the variable.
func TestMain(m *testing.M) {
	if mode := os.Getenv("PROCTEST_CHILD"); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

func child(mode string) int {
	switch mode {
	case "exit":
		fmt.Fprintln(os.Stderr, "bad config")
		return 3
	case "silent":
		time.Sleep(time.Minute)
		return 0
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Println("plain stdout line")
	for _, name := range []string{"a", "b"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 1
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {})
		go http.Serve(ln, mux)
		line, _ := json.Marshal(map[string]string{"@message": "listening", "server": name, "address": ln.Addr().String()})
		fmt.Fprintln(os.Stderr, string(line))
	}
	for {
		<-term
		if mode != "stubborn" {
			fmt.Fprintln(os.Stderr, `{"@message":"stopped"}`)
			return 0
		}
	}
}

func command(t *testing.T, mode string) Command {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Command{
		Name:         "child",
		Path:         self,
		Args:         []string{"-test.run=^$"},
		Env:          []string{"PROCTEST_CHILD=" + mode},
		Dir:          t.TempDir(),
		Servers:      []string{"a", "b"},
		ReadyServer:  "b",
		StartTimeout: 10 * time.Second,
	}
}

func TestStartFindsServersAndStops(t *testing.T) {
	var log Log
	p, addrs, err := Start(command(t, "serve"), &log)
	if err != nil {
		t.Fatalf("Start: %v\n%s", err, log.Tail(20))
	}
	for _, s := range []string{"a", "b"} {
		if !strings.HasPrefix(addrs[s], "127.0.0.1:") {
			t.Errorf("addrs[%q] = %q", s, addrs[s])
		}
	}
	if !p.Running() {
		t.Fatal("Running() = false after Start")
	}
	p.Signal(syscall.SIGTERM)
	if err, killed := p.Wait(10 * time.Second); err != nil || killed {
		t.Fatalf("Wait = %v, killed=%v", err, killed)
	}
	if p.Running() {
		t.Error("Running() = true after exit")
	}
	if !strings.Contains(log.String(), "plain stdout line") {
		t.Errorf("stdout missing from log:\n%s", log.String())
	}
	var msgs []any
	for _, m := range log.Lines() {
		msgs = append(msgs, m["@message"])
	}
	if got := fmt.Sprint(msgs); got != "[listening listening stopped]" {
		t.Errorf("Lines messages = %s", got)
	}
}

func TestWaitKillsAfterTimeout(t *testing.T) {
	var log Log
	p, _, err := Start(command(t, "stubborn"), &log)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	p.Signal(syscall.SIGTERM)
	err, killed := p.Wait(200 * time.Millisecond)
	if !killed || err == nil {
		t.Fatalf("Wait = %v, killed=%v; want a kill", err, killed)
	}
	if p.Running() {
		t.Error("Running() = true after kill")
	}
}

func TestStartFailures(t *testing.T) {
	for _, tc := range []struct {
		mode, want string
	}{
		{"exit", "child exited during start-up: exit status 3"},
		{"silent", `no "listening" lines after 300ms`},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			c := command(t, tc.mode)
			c.StartTimeout = 300 * time.Millisecond
			var log Log
			p, _, err := Start(c, &log)
			if err == nil || !strings.Contains(err.Error(), tc.want) || p != nil {
				t.Fatalf("Start = %v, %v; want error containing %q", p, err, tc.want)
			}
		})
	}
}

func TestMissingServer(t *testing.T) {
	c := command(t, "serve")
	c.Servers = []string{"a", "nope"}
	var log Log
	_, _, err := Start(c, &log)
	if err == nil || !strings.Contains(err.Error(), `no "listening" line for server=nope`) {
		t.Fatalf("Start error = %v", err)
	}
}

func TestLogTailAndWaitFor(t *testing.T) {
	var log Log
	fmt.Fprint(&log, "1\n2\n3\n4\n")
	if got, want := log.Tail(2), "... (2 lines cut)\n3\n4"; got != want {
		t.Errorf("Tail(2) = %q, want %q", got, want)
	}
	if got := log.Tail(10); got != "1\n2\n3\n4" {
		t.Errorf("Tail(10) = %q", got)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		fmt.Fprint(&log, "late line\n")
	}()
	if !log.WaitFor("late line", 5*time.Second) {
		t.Error("WaitFor missed a late line")
	}
	if log.WaitFor("never", 10*time.Millisecond) {
		t.Error("WaitFor found a missing line")
	}
}

func TestBuilderEnvOverride(t *testing.T) {
	t.Setenv("PROCTEST_TEST_BIN", "/prebuilt/bin")
	b := Builder{Pkg: "./does/not/exist", EnvVar: "PROCTEST_TEST_BIN"}
	if got, err := b.Binary(); err != nil || got != "/prebuilt/bin" {
		t.Fatalf("Binary() = %q, %v", got, err)
	}
}

func TestTempDirIsTraversableAndRemoved(t *testing.T) {
	var dir string
	t.Run("use", func(t *testing.T) {
		dir = TempDir(t, "proctest-test-")
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o755 {
			t.Errorf("mode = %v, want 0755", got)
		}
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after the test: Stat = %v, want not-exist", err)
	}
}

func TestRunnerAndSuperviseStopAtCleanup(t *testing.T) {
	var r Runner
	var log Log
	if r.Running() || r.Current() != nil {
		t.Fatal("zero Runner has a run")
	}
	r.Signal(syscall.SIGTERM) // no run: nothing happens
	stops := 0
	t.Run("test", func(t *testing.T) {
		Supervise(t, "child", &r, &log, func() error {
			stops++
			r.Signal(syscall.SIGTERM)
			err, _ := r.Current().Wait(10 * time.Second)
			return err
		})
		if _, err := r.Start(command(t, "serve"), &log); err != nil {
			t.Fatalf("Start: %v", err)
		}
		if !r.Running() {
			t.Fatal("Running() = false after Start")
		}
	})
	if stops != 1 || r.Running() {
		t.Errorf("after the test: stops=%d running=%v, want 1, false", stops, r.Running())
	}
	if !strings.Contains(log.String(), `"stopped"`) {
		t.Errorf("no clean stop in the log:\n%s", log.String())
	}
}

func TestWriteYAML(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	WriteYAML(t, p, map[string]any{"a": map[string]int{"b": 1}}, 0o600)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	if string(data) != "a:\n    b: 1\n" || fi.Mode().Perm() != 0o600 {
		t.Errorf("file = %q mode %v", data, fi.Mode().Perm())
	}
}

func TestBuilderPathPrefersExplicit(t *testing.T) {
	b := Builder{Pkg: "./does/not/exist", EnvVar: "PROCTEST_TEST_UNSET"}
	if got := b.Path(t, "/explicit/bin"); got != "/explicit/bin" {
		t.Fatalf("Path = %q", got)
	}
}
