package sidecar_test

// Issue #23: the sidecar starts and serves files whatever the agent did to
// the checkpoint store or to its UID's inotify instances; the feature is
// reported unavailable and comes back by itself once the cause is gone.
// Through the real agent-sidecar binary over t.TempDir() volumes on
// 127.0.0.1.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/internal/proctest"
	"github.com/agentworkspace/files/internal/testtree"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// storeAttack is one thing the agent can do to the store at
// services.checkpoints.dir (a folder beside the volumes here), with a
// canary folder outside the volume; repair undoes it as an admin would.
type storeAttack struct {
	name   string
	plant  func(t *testing.T, store, canary string)
	repair func(t *testing.T, store string)
	why    string // what the reason must say
}

var storeAttacks = []storeAttack{
	{"store is a symlink",
		func(t *testing.T, store, canary string) { symlink(t, canary, store) },
		func(t *testing.T, store string) { removeAll(t, store) },
		"it is a symbolic link"},
	{"foreign folder without the marker",
		func(t *testing.T, store, canary string) {
			writeFile(t, store, "notes.txt", "not a store\n")
			writeFile(t, store, "objects/ab/cd", "KEEP\n")
		},
		func(t *testing.T, store string) { removeAll(t, store) },
		"not a checkpoint store"},
	{"objects/ is a symlink",
		func(t *testing.T, store, canary string) {
			writeFile(t, store, "CHECKPOINT-STORE", "agent workspace files: checkpoint store\n")
			for _, d := range []string{"ws", "tmp", "packs"} {
				mkdir(t, store, d)
			}
			symlink(t, canary, filepath.Join(store, "objects"))
		},
		func(t *testing.T, store string) {
			removeAll(t, filepath.Join(store, "objects"))
			mkdir(t, store, "objects")
		},
		"its objects/ folder is a symbolic link"},
	{"store unreadable",
		func(t *testing.T, store, canary string) {
			writeFile(t, store, "CHECKPOINT-STORE", "agent workspace files: checkpoint store\n")
			if err := os.Chmod(store, 0); err != nil {
				t.Fatal(err)
			}
		},
		func(t *testing.T, store string) {
			if err := os.Chmod(store, 0o700); err != nil {
				t.Fatal(err)
			}
		},
		"permission denied"},
}

func TestCheckpointStoreUnusableThroughTheBinary(t *testing.T) {
	for _, a := range storeAttacks {
		t.Run(a.name, func(t *testing.T) { storeUnusable(t, a) })
	}
}

func storeUnusable(t *testing.T, a storeAttack) {
	base := t.TempDir()
	projects, codex, canary := filepath.Join(base, "projects"), filepath.Join(base, "codex"), filepath.Join(base, "outside", "bait")
	mkdir(t, base, "projects")
	mkdir(t, base, "codex")
	writeFile(t, canary, "canary.txt", "CANARY\n")
	os.Chmod(canary, 0o777) // writable by the sidecar: only confinement keeps it out
	writeFile(t, projects, "demo/old/a.txt", "A\n")
	store := filepath.Join(base, "checkpoints")
	a.plant(t, store, canary)
	sidecartest.Chown(t, base)
	outsideBefore := testtree.Snap(t, filepath.Join(base, "outside"), testtree.Modes(), testtree.AllMTimes())

	sc := sidecartest.Start(t, sidecartest.Options{ProjectsDir: projects, CodexHome: codex,
		Configure: func(c *sidecar.Config) { c.Services.Checkpoints.Dir = store }})
	ctx := ctxT(t)
	filesWork(t, sc, ctx)
	ck := workspacev1.NewCheckpointServiceClient(sc.Conn(t))
	_, err := ck.CreateCheckpoint(ctx, &workspacev1.CreateCheckpointRequest{Workspace: proj("demo")})
	wantErr(t, err, codes.Unavailable, "CHECKPOINTS_UNAVAILABLE")
	if msg := status.Convert(err).Message(); !strings.HasPrefix(msg, "the checkpoint store is not usable: ") || !strings.Contains(msg, a.why) || strings.Contains(msg, base) {
		t.Fatalf("message %q does not say why in safe words", msg)
	}
	_, err = ck.ListCheckpoints(ctx, &workspacev1.ListCheckpointsRequest{Workspace: proj("demo")})
	wantErr(t, err, codes.Unavailable, "CHECKPOINTS_UNAVAILABLE")
	// A recursive delete would take an automatic checkpoint: refused, not
	// done without its safety net.
	c := sc.Dial(t)
	old := must[*workspacev1.ListEntriesResponse](t)(c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: proj("demo"), Path: "old"}))
	_, err = c.DeleteEntry(ctx, &workspacev1.DeleteEntryRequest{Workspace: proj("demo"), Path: "old", ExpectedRevision: old.GetDirectoryRevision(), Recursive: true})
	wantErr(t, err, codes.Unavailable, "CHECKPOINTS_UNAVAILABLE")
	if _, err := os.Stat(filepath.Join(projects, "demo/old/a.txt")); err != nil {
		t.Fatalf("the refused delete deleted: %v", err)
	}
	wantFeature(t, sc, "checkpoints", false, a.why)
	wantFeature(t, sc, "watch", true, "")
	if !sc.WaitLog(`"feature":"checkpoints"`, 5*time.Second) || !strings.Contains(sc.Logs(), "feature unavailable") {
		t.Fatalf("no log line for the unavailable store")
	}

	a.repair(t, store)
	sidecartest.Chown(t, projects)
	waitFor(t, "checkpoints after the repair", func() error {
		_, err := ck.CreateCheckpoint(ctx, &workspacev1.CreateCheckpointRequest{Workspace: proj("demo")})
		return err
	})
	wantFeature(t, sc, "checkpoints", true, "")
	if !sc.WaitLog("feature available", 5*time.Second) {
		t.Fatal("no log line for the store coming back")
	}
	old = must[*workspacev1.ListEntriesResponse](t)(c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: proj("demo"), Path: "old"})) // the chown moved its ctime
	if _, err := c.DeleteEntry(ctx, &workspacev1.DeleteEntryRequest{Workspace: proj("demo"), Path: "old", ExpectedRevision: old.GetDirectoryRevision(), Recursive: true}); err != nil {
		t.Fatalf("delete once the store is back: %v", err)
	}
	if d := testtree.Diff(outsideBefore, testtree.Snap(t, filepath.Join(base, "outside"), testtree.Modes(), testtree.AllMTimes())); len(d) > 0 {
		t.Fatalf("outside the volume changed:\n%s", strings.Join(d, "\n"))
	}
}

// filesWork: create a project, write, read and WebDAV GET a file.
func filesWork(t *testing.T, sc *sidecartest.Sidecar, ctx context.Context) {
	t.Helper()
	c := sc.Dial(t)
	if _, err := c.CreateProject(ctx, &workspacev1.CreateProjectRequest{Name: "fresh"}); err != nil {
		t.Fatalf("CreateProject: %v", err)
	}
	e := must[*workspacev1.Entry](t)(c.CreateEntry(ctx, &workspacev1.CreateEntryRequest{Workspace: proj("fresh"), Name: "a.txt", Type: workspacev1.EntryType_ENTRY_TYPE_FILE}))
	if _, err := c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: proj("fresh"), Path: "a.txt", Content: "hello\n", ExpectedRevision: e.GetRevision()}); err != nil {
		t.Fatalf("UpdateFile: %v", err)
	}
	f := must[*workspacev1.GetFileResponse](t)(c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: proj("fresh"), Path: "a.txt"}))
	if f.GetContent() != "hello\n" {
		t.Fatalf("GetFile = %q", f.GetContent())
	}
	resp, body := dav(t, http.MethodGet, sc.PlainDavURL()+"/projects/fresh/a.txt", nil)
	if resp.StatusCode != http.StatusOK || body != "hello\n" {
		t.Fatalf("WebDAV GET: %s %q", resp.Status, body)
	}
	resp, _ = dav(t, http.MethodGet, sc.MetricsURL+"/readyz", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz: %s", resp.Status)
	}
}

// wantFeature checks /readyz?verbose (200, the feature's line) and the
// sidecar_feature_available gauge.
func wantFeature(t *testing.T, sc *sidecartest.Sidecar, name string, ok bool, why string) {
	t.Helper()
	resp, body := dav(t, http.MethodGet, sc.MetricsURL+"/readyz?verbose", nil)
	line := "[+]" + name + " ok"
	if !ok {
		line = "[-]" + name + " unavailable: "
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, line) || !strings.Contains(body, why) ||
		!strings.Contains(body, "[+]files ok") || !strings.HasSuffix(body, "readyz check passed\n") || strings.Contains(body, sc.ProjectsDir) {
		t.Fatalf("/readyz?verbose: %s\n%s", resp.Status, body)
	}
	want := map[bool]string{true: "1", false: "0"}[ok]
	if got := metric(t, sc, `sidecar_feature_available{feature="`+name+`"}`); got != want {
		t.Fatalf("sidecar_feature_available{feature=%q} = %q, want %s", name, got, want)
	}
}

// waitFor retries call (each failure asks the sidecar for an early retry)
// until it succeeds, for at most 15 s.
func waitFor(t *testing.T, what string, call func() error) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := call()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func removeAll(t *testing.T, p string) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
}

// The agent holds every inotify instance of the sidecar's user: the
// sidecar starts, files work, live changes answer WATCH_UNAVAILABLE; once
// the attacker is gone the watcher starts by itself and streams changes.
// The sidecar and the attacker run as a UID no other process uses, so
// tests running beside this one as UID 1000 keep their instances.
func TestWatchUnavailableThroughTheBinary(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root: it runs the sidecar and the attacker as a dedicated UID")
	}
	uid := unusedUID(t)
	hog := startInotifyHog(t, uid)

	sc := sidecartest.Start(t, sidecartest.Options{UID: uid})
	ctx := ctxT(t)
	filesWork(t, sc, ctx)
	watch := func(d time.Duration) error {
		wctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		st, err := workspacev1.NewWatchServiceClient(sc.Conn(t)).Watch(wctx, &workspacev1.WatchRequest{Workspace: proj("fresh"), Directories: []string{""}})
		if err == nil {
			_, err = st.Recv()
		}
		if status.Code(err) == codes.DeadlineExceeded {
			return nil // subscribed: nothing happened in d
		}
		return err
	}
	err := watch(2 * time.Second)
	wantErr(t, err, codes.Unavailable, "WATCH_UNAVAILABLE")
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "inotify instances") {
		t.Fatalf("message %q does not say why", msg)
	}
	wantFeature(t, sc, "watch", false, "inotify instances")
	wantFeature(t, sc, "checkpoints", true, "")

	hog.Process.Kill()
	hog.Wait()
	waitFor(t, "watch after the attacker left", func() error { return watch(300 * time.Millisecond) })
	wantFeature(t, sc, "watch", true, "")
	// And it streams: a change made through the service arrives.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := workspacev1.NewWatchServiceClient(sc.Conn(t)).Watch(wctx, &workspacev1.WatchRequest{Workspace: proj("fresh"), Directories: []string{""}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Header(); err != nil { // subscribed before the change
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	must[*workspacev1.Entry](t)(sc.Dial(t).CreateEntry(ctx, &workspacev1.CreateEntryRequest{Workspace: proj("fresh"), Name: "b.txt", Type: workspacev1.EntryType_ENTRY_TYPE_FILE}))
	for {
		ev, err := st.Recv()
		if err != nil {
			t.Fatalf("no event for b.txt: %v", err)
		}
		if ev.GetPath() == "b.txt" {
			break
		}
	}
}

// unusedUID picks a UID in 40000-49999 that no process runs as.
func unusedUID(t *testing.T) int {
	t.Helper()
	used := map[int]bool{}
	procs, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 3 && f[0] == "Uid:" {
				for _, v := range f[1:] {
					n, _ := strconv.Atoi(v)
					used[n] = true
				}
			}
		}
	}
	for range 100 {
		if uid := 40000 + rand.IntN(10000); !used[uid] {
			return uid
		}
	}
	t.Fatal("no unused UID in 40000-49999")
	return 0
}

// startInotifyHog runs a copy of this test binary as uid holding every
// inotify instance uid may create (main_test.go), and checks it holds
// fs.inotify.max_user_instances of them. It is killed in t.Cleanup.
func startInotifyHog(t *testing.T, uid int) *exec.Cmd {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_instances")
	if err != nil {
		t.Fatal(err)
	}
	limit, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := proctest.TempDir(t, "inotify-hog-")
	bin := filepath.Join(dir, "hog")
	copyFile(t, self, bin)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), inotifyHogEnv+"=1")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("inotify hog: %v", err)
	}
	if want := fmt.Sprintf("holding %d\n", limit); line != want {
		t.Fatalf("inotify hog says %q, want %q (is UID %d in use?)", line, want, uid)
	}
	return cmd
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
