package sidecar_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/internal/proctest"
	"github.com/agentworkspace/files/internal/testtree"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

func TestBadConfigExits2(t *testing.T) {
	bin, err := sidecartest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name, yaml string
		args       []string
		want       []string
	}{
		{"no --config", "", []string{}, []string{"agent-sidecar: usage: agent-sidecar --config FILE"}},
		{"missing file", "", []string{"--config", filepath.Join(dir, "nope.yaml")}, []string{"agent-sidecar: invalid configuration: config: open "}},
		{"unknown key", "rpcServer: {address: ':0', port: 1}\nservices: {project: {maxPageSise: 1}}\n", nil, []string{
			"agent-sidecar: invalid configuration: rpcServer.port: unknown key (line 1)",
			"agent-sidecar: invalid configuration: services.project.maxPageSise: unknown key (line 2)",
		}},
		{"bad values", "services: {project: {maxPageSize: 0, projectsRootDir: rel}}\nlog: {level: loud}\n", nil, []string{
			`agent-sidecar: invalid configuration: log.level: must be one of trace, debug, info, warn, error (got "loud")`,
			`agent-sidecar: invalid configuration: services.project.projectsRootDir: must be an absolute path (got "rel")`,
			"agent-sidecar: invalid configuration: services.project.maxPageSize: must be between 1 and 10000 (got 0)",
			"agent-sidecar: invalid configuration: tls.certFile: must be set",
			"agent-sidecar: invalid configuration: tls.keyFile: must be set",
			"agent-sidecar: invalid configuration: tls.clientCAFile: must be set",
		}},
		{"tls half set", "tls: {certFile: /t/tls.crt}\n", nil, []string{
			"agent-sidecar: invalid configuration: tls.keyFile: must be set",
			"agent-sidecar: invalid configuration: tls.clientCAFile: must be set",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if args == nil {
				p := filepath.Join(dir, "config.yaml")
				if err := os.WriteFile(p, []byte(tc.yaml), 0o644); err != nil {
					t.Fatal(err)
				}
				args = []string{"--config", p}
			}
			var stderr bytes.Buffer
			cmd := exec.Command(bin, args...)
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit: %v, want status 2; stderr:\n%s", err, stderr.String())
			}
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("stderr has %d lines, want %d:\n%s", len(lines), len(tc.want), stderr.String())
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
				}
			}
		})
	}
}

// TestRestartKeepsContent: a restart never initialises, cleans or rewrites
// existing content (PRD §6.4, §14).
func TestRestartKeepsContent(t *testing.T) {
	sc := sidecartest.Start(t, sidecartest.Options{})
	c := sc.Dial(t)
	ctx := ctxT(t)
	must[*workspacev1.Project](t)(c.CreateProject(ctx, &workspacev1.CreateProjectRequest{Name: "demo"}))
	e := must[*workspacev1.Entry](t)(c.CreateEntry(ctx, &workspacev1.CreateEntryRequest{Workspace: proj("demo"), Name: "a.txt", Type: workspacev1.EntryType_ENTRY_TYPE_FILE}))
	must[*workspacev1.Entry](t)(c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: proj("demo"), Path: "a.txt", Content: "v1", ExpectedRevision: e.GetRevision()}))
	// Content the product must leave alone: a non-git project, denylisted
	// and hidden dirs, a symlink, a binary file, CODEX_HOME secrets.
	writeFile(t, sc.ProjectsDir, "legacy/node_modules/m.js", "m")
	writeFile(t, sc.ProjectsDir, "legacy/.hidden/x", "x")
	writeFile(t, sc.ProjectsDir, "legacy/bin.dat", "\x00\x01")
	if err := os.Symlink("bin.dat", filepath.Join(sc.ProjectsDir, "legacy", "link")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, sc.CodexHome, "auth.json", "{}")
	writeFile(t, sc.CodexHome, "sessions/s1.jsonl", "{}")
	if err := sc.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	before := map[string]testtree.Snapshot{"projects": testtree.Snap(t, sc.ProjectsDir, testtree.Modes(), testtree.AllMTimes()), "codex": testtree.Snap(t, sc.CodexHome, testtree.Modes(), testtree.AllMTimes())}

	sc.Restart()
	c = sc.Dial(t)
	f := must[*workspacev1.GetFileResponse](t)(c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: proj("demo"), Path: "a.txt"}))
	if f.GetContent() != "v1" {
		t.Errorf("content after restart %q", f.GetContent())
	}
	r := must[*workspacev1.ListProjectsResponse](t)(c.ListProjects(ctx, &workspacev1.ListProjectsRequest{}))
	if len(r.GetProjects()) != 2 || r.GetProjects()[1].GetName() != "legacy" || r.GetProjects()[1].GetGitInitialized() {
		t.Errorf("projects after restart %v", r.GetProjects())
	}
	sc.Kill() // a crash, then a start: still nothing rewritten
	sc.Restart()
	if err := sc.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	after := map[string]testtree.Snapshot{"projects": testtree.Snap(t, sc.ProjectsDir, testtree.Modes(), testtree.AllMTimes()), "codex": testtree.Snap(t, sc.CodexHome, testtree.Modes(), testtree.AllMTimes())}
	for k := range before {
		if d := testtree.Diff(before[k], after[k]); len(d) > 0 {
			t.Errorf("%s changed across restarts:\n%s", k, strings.Join(d, "\n"))
		}
	}
}

// slowPUT starts a WebDAV PUT of size bytes whose body the test feeds; it
// returns the body writer and a channel with the response (or error). An
// existing target is replaced with If-Match (the sidecar requires it).
func slowPUT(t *testing.T, url string, size int64, hdr ...string) (*io.PipeWriter, chan putResult) {
	t.Helper()
	if resp, _ := dav(t, http.MethodHead, url, nil); resp.StatusCode == 200 {
		hdr = append(hdr, "If-Match", resp.Header.Get("ETag"))
	}
	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodPut, url, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res := make(chan putResult, 1)
	go func() {
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			res <- putResult{status: resp.StatusCode}
			return
		}
		res <- putResult{err: err}
	}()
	return pw, res
}

type putResult struct {
	status int
	err    error
}

func setupFile(t *testing.T, sc *sidecartest.Sidecar, content string) string {
	t.Helper()
	c := sc.Dial(t)
	ctx := ctxT(t)
	must[*workspacev1.Project](t)(c.CreateProject(ctx, &workspacev1.CreateProjectRequest{Name: "demo"}))
	writeFile(t, filepath.Join(sc.ProjectsDir, "demo"), "f.txt", content)
	return filepath.Join(sc.ProjectsDir, "demo", "f.txt")
}

// waitLog waits until the sidecar logged msg.
func waitLog(t *testing.T, sc *sidecartest.Sidecar, msg string) {
	t.Helper()
	if !sc.WaitLog(msg, 10*time.Second) {
		t.Fatalf("no %q in the logs", msg)
	}
}

func TestSIGTERMDrainsInFlightPUT(t *testing.T) {
	sc := sidecartest.Start(t, sidecartest.Options{})
	path := setupFile(t, sc, "original")
	body := bytes.Repeat([]byte("n"), 1<<20)
	pw, res := slowPUT(t, sc.PlainDavURL()+"/projects/demo/f.txt", int64(len(body)))
	if _, err := pw.Write(body[:64<<10]); err != nil {
		t.Fatal(err)
	}
	waitInFlight(t, filepath.Dir(path))
	sc.Terminate()
	waitLog(t, sc, `"shutting down"`)
	time.Sleep(100 * time.Millisecond)
	if readFile(t, path) != "original" {
		t.Fatal("partial upload visible")
	}
	// The in-flight upload is drained: it completes and commits.
	if _, err := pw.Write(body[64<<10:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	r := <-res
	if r.err != nil || r.status/100 != 2 {
		t.Fatalf("drained PUT: %+v", r)
	}
	if err := sc.Wait(); err != nil {
		t.Fatalf("exit after drain: %v", err)
	}
	if got := readFile(t, path); got != string(body) {
		t.Errorf("content after drained PUT: %d bytes", len(got))
	}
}

func TestInterruptedPUTKeepsOriginal(t *testing.T) {
	t.Run("client aborts during shutdown", func(t *testing.T) {
		sc := sidecartest.Start(t, sidecartest.Options{})
		path := setupFile(t, sc, "original")
		pw, res := slowPUT(t, sc.PlainDavURL()+"/projects/demo/f.txt", 1<<20)
		pw.Write(bytes.Repeat([]byte("p"), 64<<10))
		waitInFlight(t, filepath.Dir(path))
		sc.Terminate()
		waitLog(t, sc, `"shutting down"`)
		pw.CloseWithError(errors.New("client gave up"))
		<-res
		if err := sc.Wait(); err != nil {
			t.Fatalf("exit: %v", err)
		}
		if readFile(t, path) != "original" {
			t.Error("aborted upload changed the file")
		}
		checkNoTemp(t, filepath.Dir(path), sc)
	})
	t.Run("shutdown timeout cuts a stalled upload", func(t *testing.T) {
		sc := sidecartest.Start(t, sidecartest.Options{ShutdownTimeout: 500 * time.Millisecond})
		path := setupFile(t, sc, "original")
		pw, res := slowPUT(t, sc.PlainDavURL()+"/projects/demo/f.txt", 1<<20)
		defer pw.Close()
		pw.Write(bytes.Repeat([]byte("p"), 64<<10))
		waitInFlight(t, filepath.Dir(path))
		start := time.Now()
		if err := sc.Stop(); err != nil {
			t.Fatalf("exit: %v", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("shutdown took %v with a 500ms bound", d)
		}
		pw.CloseWithError(errors.New("test done")) // unblock the client's body writer
		r := <-res
		if r.err == nil && r.status/100 == 2 {
			t.Errorf("stalled upload succeeded: %+v", r)
		}
		if readFile(t, path) != "original" {
			t.Error("cut upload changed the file")
		}
	})
	t.Run("SIGKILL mid-upload", func(t *testing.T) {
		sc := sidecartest.Start(t, sidecartest.Options{})
		path := setupFile(t, sc, "original")
		pw, res := slowPUT(t, sc.PlainDavURL()+"/projects/demo/f.txt", 1<<20)
		defer pw.Close()
		pw.Write(bytes.Repeat([]byte("k"), 64<<10))
		waitInFlight(t, filepath.Dir(path))
		sc.Kill()
		pw.CloseWithError(errors.New("test done"))
		<-res
		if readFile(t, path) != "original" {
			t.Error("killed upload changed the file")
		}
		sc.Restart() // sweeps davfs's stale temp file
		checkNoTemp(t, filepath.Dir(path), sc)
		f := must[*workspacev1.GetFileResponse](t)(sc.Dial(t).GetFile(ctxT(t), &workspacev1.GetFileRequest{Workspace: proj("demo"), Path: "f.txt"}))
		if f.GetContent() != "original" {
			t.Errorf("content %q", f.GetContent())
		}
	})
}

// waitInFlight waits until an upload into dir is being streamed by the
// sidecar: davfs's temp file for it exists beside f.txt.
func waitInFlight(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.Name() != "f.txt" && e.Name() != ".git" {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the upload never reached the sidecar (no temp file)")
}

// checkNoTemp: the directory holds only f.txt (no temp file left over).
func checkNoTemp(t *testing.T, dir string, sc *sidecartest.Sidecar) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if e.Name() != ".git" {
			names = append(names, e.Name())
		}
	}
	if len(names) != 1 || names[0] != "f.txt" {
		t.Errorf("directory holds %v, want only f.txt", names)
	}
}

func TestMetrics(t *testing.T) {
	sc := sidecartest.Start(t, sidecartest.Options{})
	c := sc.Dial(t)
	ctx := ctxT(t)
	must[*workspacev1.Project](t)(c.CreateProject(ctx, &workspacev1.CreateProjectRequest{Name: "demo"}))
	e := must[*workspacev1.Entry](t)(c.CreateEntry(ctx, &workspacev1.CreateEntryRequest{Workspace: proj("demo"), Name: "a.txt", Type: workspacev1.EntryType_ENTRY_TYPE_FILE}))
	_, err := c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: proj("demo"), Path: "a.txt", Content: "x", ExpectedRevision: "stale"})
	wantErr(t, err, codes.Aborted, "REVISION_MISMATCH")
	_, err = c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: proj("demo"), Path: ".git"})
	wantErr(t, err, codes.PermissionDenied, "DENYLISTED")
	_, err = c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: proj("demo"), Path: "../x"})
	wantErr(t, err, codes.InvalidArgument, "INVALID_PATH")
	_, err = c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: proj("demo"), Path: "a.txt", Content: strings.Repeat("x", 1<<20+1), ExpectedRevision: e.GetRevision()})
	wantErr(t, err, codes.ResourceExhausted, "TOO_LARGE")

	for name, want := range map[string]string{
		`sidecar_grpc_requests_total{action="CreateProject",result="success"}`:                     "1",
		`sidecar_grpc_requests_total{action="UpdateFile",result="error"}`:                          "2",
		`sidecar_grpc_errors_total{action="UpdateFile",code="Aborted",reason="REVISION_MISMATCH"}`: "1",
		`sidecar_grpc_revision_conflicts_total{action="UpdateFile",reason="REVISION_MISMATCH"}`:    "1",
		`sidecar_grpc_path_rejections_total{action="ListEntries",reason="DENYLISTED"}`:             "1",
		`sidecar_grpc_path_rejections_total{action="ListEntries",reason="INVALID_PATH"}`:           "1",
		`sidecar_grpc_size_limit_rejections_total{action="UpdateFile",reason="TOO_LARGE"}`:         "1",
		`sidecar_grpc_request_duration_seconds_count{action="CreateEntry"}`:                        "1",
		`sidecar_git_init_failures_total`:                                                          "0",
	} {
		if got := metric(t, sc, name); got != want {
			t.Errorf("%s = %q, want %s", name, got, want)
		}
	}
	resp, _ := dav(t, http.MethodGet, sc.MetricsURL+"/healthz", nil)
	if resp.StatusCode != 200 {
		t.Errorf("/healthz %s", resp.Status)
	}
}

// TestSIGTERMDrainsInFlightRPC: a CreateProject whose git init is slow
// still completes after SIGTERM (GracefulStop), and the process exits 0.
func TestSIGTERMDrainsInFlightRPC(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git is not installed: run make setup")
	}
	bin := proctest.TempDir(t, "slowgit-")
	marks := filepath.Join(bin, "marks")
	if err := os.Mkdir(marks, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(marks, 0o777) // the sidecar (UID 1000) writes the marker
	script := "#!/bin/sh\ntouch " + marks + "/started\nsleep 1\nexec " + git + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	sc := sidecartest.Start(t, sidecartest.Options{Env: []string{"PATH=" + bin + ":" + os.Getenv("PATH")}})
	c := sc.Dial(t)
	res := make(chan error, 1)
	go func() {
		_, err := c.CreateProject(ctxT(t), &workspacev1.CreateProjectRequest{Name: "slow"})
		res <- err
	}()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(marks, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("git init never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	sc.Terminate()
	if err := <-res; err != nil {
		t.Fatalf("in-flight CreateProject: %v", err)
	}
	if err := sc.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(sc.ProjectsDir, "slow", ".git")); err != nil || !fi.IsDir() {
		t.Errorf("project not initialised: %v", err)
	}
	logs := sc.Logs()
	stop, done := strings.Index(logs, `"shutting down"`), strings.Index(logs, `"method":"/workspace.v1.WorkspaceService/CreateProject"`)
	if stop < 0 || done < 0 || stop > done {
		t.Errorf("SIGTERM did not arrive while CreateProject was in flight (shutdown at %d, call logged at %d)", stop, done)
	}
}
