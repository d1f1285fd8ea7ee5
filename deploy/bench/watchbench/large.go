package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/deploy/bench/benchproc"
)

// The large folder (issue #23, "one watched 200,000-entry folder costs
// +158 MiB and 87 % of a core while the agent writes"): -large files in
// one directory, watched by one subscriber of the real sidecar and, in
// the same run, by a raw fsnotify watcher in a child process of this
// program (it only drains the events: the floor of watching at all); a
// writer rewrites -large-rate files a second for -large-seconds. Each
// round starts both afresh; the figures are each process's CPU while the
// writer runs (utime+stime from /proc/PID/stat) and resident memory
// (VmRSS before the watch, after it, and the peak VmHWM during the writes).

// rawWatchArg is the argument that makes this program the raw watcher.
const rawWatchArg = "raw-watch-child"

// rawWatch is the raw watcher child: fsnotify on dir, events drained; it
// prints a line once the watch is in place and runs until killed.
func rawWatch(dir string) error {
	w, err := fsnotify.NewBufferedWatcher(1024)
	if err != nil {
		return err
	}
	if err := w.Add(dir); err != nil {
		return err
	}
	fmt.Println("watching")
	for {
		select {
		case _, ok := <-w.Events:
			if !ok {
				return nil
			}
		case <-w.Errors:
		}
	}
}

type largeWatch struct {
	sideCPU, rawCPU               float64 // share of one core while writing
	sideBase, sideWatch, sidePeak int64   // KiB: before the watch, after it, peak while writing
	rawWatch, rawPeak             int64   // KiB
	events                        int     // changes the sidecar's subscriber received while writing
}

func runLarge(rounds, files, rate int, secs time.Duration) error {
	work, err := os.MkdirTemp("", "watchbench-large-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	root := filepath.Join(work, "vol")
	dir := filepath.Join(root, "projects", "bench", "big")
	for _, d := range []string{dir, filepath.Join(root, "codex")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	fmt.Printf("\n== a watched folder of %d files, a writer rewriting %d a second for %v ==\npreparing ...\n", files, rate, secs)
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, bigName(i)), []byte(strconv.Itoa(i)), 0o644); err != nil {
			return err
		}
	}
	var out []largeWatch
	for r := range rounds {
		s, err := largeWatchOnce(work, root, dir, files, rate, secs)
		if err != nil {
			return fmt.Errorf("round %d: %w", r+1, err)
		}
		fmt.Printf("round %d: sidecar %.1f%% of a core, RSS %d -> %d KiB watching (+%d), peak %d KiB writing, %d changes; raw fsnotify %.1f%%, RSS %d KiB, peak %d KiB\n",
			r+1, 100*s.sideCPU, s.sideBase, s.sideWatch, s.sideWatch-s.sideBase, s.sidePeak, s.events, 100*s.rawCPU, s.rawWatch, s.rawPeak)
		out = append(out, s)
	}
	med := func(f func(largeWatch) int64) int64 { return benchproc.Median(colW(out, f)) }
	medF := func(f func(largeWatch) float64) float64 { return benchproc.Median(colW(out, f)) }
	fmt.Printf("\nwatched %d-entry folder, %d writes/s, %d rounds (median)\n", files, rate, len(out))
	fmt.Printf("| | CPU while writing | RSS watching | peak RSS writing |\n|---|---|---|---|\n")
	fmt.Printf("| sidecar (one subscriber) | %.1f%% of a core | %.1f MiB (+%.1f MiB for the watch) | %.1f MiB |\n",
		100*medF(func(s largeWatch) float64 { return s.sideCPU }), kib(med(func(s largeWatch) int64 { return s.sideWatch })),
		kib(med(func(s largeWatch) int64 { return s.sideWatch - s.sideBase })), kib(med(func(s largeWatch) int64 { return s.sidePeak })))
	fmt.Printf("| raw fsnotify (drains events) | %.1f%% of a core | %.1f MiB | %.1f MiB |\n",
		100*medF(func(s largeWatch) float64 { return s.rawCPU }), kib(med(func(s largeWatch) int64 { return s.rawWatch })), kib(med(func(s largeWatch) int64 { return s.rawPeak })))
	return nil
}

func bigName(i int) string { return fmt.Sprintf("f%06d.txt", i) }

func kib(n int64) float64 { return float64(n) / 1024 }

func colW[T any](ss []largeWatch, f func(largeWatch) T) []T {
	out := make([]T, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

func largeWatchOnce(work, root, dir string, files, rate int, secs time.Duration) (largeWatch, error) {
	var s largeWatch
	sc, err := benchproc.StartSidecar(work, "", benchproc.SidecarConfig(root), "rpc")
	if err != nil {
		return s, err
	}
	defer sc.Stop()
	raw, err := benchproc.StartChild(nil, rawWatchArg, dir)
	if err != nil {
		return s, err
	}
	defer raw.Stop()
	s.sideBase = benchproc.StatusKB(sc.PID, "VmRSS")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := workspacev1.NewWatchServiceClient(sc.Conn)
	st, err := client.Watch(ctx, &workspacev1.WatchRequest{Workspace: &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: "bench"}, Directories: []string{"big"}})
	if err != nil {
		return s, err
	}
	if ev, err := st.Recv(); err != nil || ev.GetKind() != workspacev1.WatchEventKind_WATCH_EVENT_KIND_READY {
		return s, fmt.Errorf("watch: no ready event: %v", err)
	}
	events := make(chan int, 1)
	go func() {
		n := 0
		for {
			if _, err := st.Recv(); err != nil {
				events <- n
				return
			}
			n++
		}
	}()
	time.Sleep(time.Second)
	s.sideWatch = benchproc.StatusKB(sc.PID, "VmRSS")
	s.rawWatch = benchproc.StatusKB(raw.PID, "VmRSS")
	benchproc.ResetPeak(sc.PID)
	benchproc.ResetPeak(raw.PID)
	side0, raw0 := cpuTicks(sc.PID), cpuTicks(raw.PID)
	t0 := time.Now()
	gap := time.Second / time.Duration(rate)
	for i := 0; time.Since(t0) < secs; i++ {
		if err := os.WriteFile(filepath.Join(dir, bigName(i*7919%files)), []byte(strconv.Itoa(i)), 0o644); err != nil {
			return s, err
		}
		if wait := t0.Add(time.Duration(i+1) * gap).Sub(time.Now()); wait > 0 {
			time.Sleep(wait)
		}
	}
	time.Sleep(time.Second) // the last flush
	took := time.Since(t0).Seconds()
	s.sideCPU = float64(cpuTicks(sc.PID)-side0) / 100 / took
	s.rawCPU = float64(cpuTicks(raw.PID)-raw0) / 100 / took
	s.sidePeak = benchproc.StatusKB(sc.PID, "VmHWM")
	s.rawPeak = benchproc.StatusKB(raw.PID, "VmHWM")
	cancel()
	s.events = <-events
	return s, nil
}

// cpuTicks is utime+stime of pid in clock ticks (USER_HZ, 100 on Linux),
// from /proc/PID/stat, or -1.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// Fields after the command name (which may hold spaces) in parentheses:
	// state is field 3, utime 14 and stime 15.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return -1
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}
