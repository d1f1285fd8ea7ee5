package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/deploy/bench/benchproc"
)

// The large project (issue #23, "memory and time bounded by the
// configuration"): -large files (default 199,000: with their 995
// directories just under the default maxEntries, 200,000) of -large-bytes
// each, and the sequence the issue measured on it, each call timed and the
// sidecar's peak resident memory (VmHWM, reset before each call) read:
// a first checkpoint, a second after 10 files changed, a compare of the
// whole project with the first, a one-file restore, and a list of the
// checkpoints holding one path (the last file), twice: then after a
// restart of the sidecar, with nothing cached. Each round runs the sequence twice on a
// fresh sidecar and store, interleaved: without GOMEMLIMIT and with
// -gomemlimit (what the manifests set), so load from elsewhere on the
// machine falls on both alike.

// largeCalls names the calls of the sequence, in order.
var largeCalls = []string{"first checkpoint", "second checkpoint", "compare (whole project)", "restore one file", "list holding one path",
	"list holding one path, after a restart (nothing cached)"}

type largeRun struct {
	limit string          // GOMEMLIMIT of the sidecar ("" none)
	took  []time.Duration // per call, as largeCalls
	peak  []int64         // VmHWM KiB per call
	start int64           // VmRSS KiB when started
}

func runLarge(rounds, files, bytes int, limit, dir string) error {
	work, root, proj, err := workDir(dir, "ckptbench-large")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	fmt.Printf("\n== large project: %d files of %d bytes in %d directories ==\npreparing ...\n", files, bytes, (files+199)/200)
	buf := make([]byte, bytes)
	for i := range files {
		p := largeFile(proj, i)
		if i%200 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
		}
		rand.Read(buf)
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			return err
		}
	}
	var out []largeRun
	limits := []string{"", limit}
	for r := range rounds {
		for _, l := range limits {
			run, err := largeOnce(work, root, proj, files, bytes, l)
			if err != nil {
				return fmt.Errorf("round %d, GOMEMLIMIT %q: %w", r+1, l, err)
			}
			fmt.Printf("round %d %s: %s\n", r+1, limitName(l), run.line())
			out = append(out, run)
		}
	}
	reportLarge(out, limits)
	return nil
}

// largeFile is the path of file i: 200 files per directory.
func largeFile(proj string, i int) string {
	return filepath.Join(proj, fmt.Sprintf("d%04d", i/200), fmt.Sprintf("f%06d.txt", i))
}

func limitName(l string) string {
	if l == "" {
		return "no GOMEMLIMIT"
	}
	return "GOMEMLIMIT=" + l
}

// largeOnce runs the sequence once on a new sidecar (GOMEMLIMIT limit) with
// an empty store.
func largeOnce(work, root, proj string, files, bytes int, limit string) (largeRun, error) {
	run := largeRun{limit: limit}
	store := filepath.Join(work, "store")
	if err := os.RemoveAll(store); err != nil {
		return run, err
	}
	cfg := benchproc.SidecarConfig(root)
	cfg.Services.Checkpoints.Dir = store
	start := func() (*benchproc.Proc, error) {
		if limit != "" {
			os.Setenv("GOMEMLIMIT", limit)
		}
		defer os.Unsetenv("GOMEMLIMIT")
		return benchproc.StartSidecar(work, "", cfg, "rpc")
	}
	sc, err := start()
	if err != nil {
		return run, err
	}
	defer func() { sc.Stop() }()
	run.start = benchproc.StatusKB(sc.PID, "VmRSS")
	cl := workspacev1.NewCheckpointServiceClient(sc.Conn)
	steps := largeSteps(&cl, proj, files, bytes)
	for i, step := range steps {
		// The settle wait: files whose ctime is recent are read again; the
		// sequence runs as an operator would, seconds apart.
		time.Sleep(2500 * time.Millisecond)
		if i == len(steps)-1 {
			sc.Stop()
			if sc, err = start(); err != nil {
				return run, err
			}
			cl = workspacev1.NewCheckpointServiceClient(sc.Conn)
		}
		benchproc.ResetPeak(sc.PID)
		t0 := time.Now()
		if err := step(); err != nil {
			return run, fmt.Errorf("%s: %w", largeCalls[i], err)
		}
		run.took = append(run.took, time.Since(t0))
		run.peak = append(run.peak, benchproc.StatusKB(sc.PID, "VmHWM"))
	}
	return run, nil
}

func (r largeRun) line() string {
	var b strings.Builder
	for i, c := range largeCalls {
		fmt.Fprintf(&b, "%s %v (%d MiB); ", c, r.took[i].Round(time.Millisecond), r.peak[i]>>10)
	}
	fmt.Fprintf(&b, "peak %d MiB", r.max()>>10)
	return b.String()
}

func (r largeRun) max() int64 {
	var m int64
	for _, p := range r.peak {
		m = max(m, p)
	}
	return m
}

func reportLarge(runs []largeRun, limits []string) {
	for _, l := range limits {
		var rs []largeRun
		for _, r := range runs {
			if r.limit == l {
				rs = append(rs, r)
			}
		}
		fmt.Printf("\nlarge project, sidecar %s, %d runs (median; container limit 512 MiB)\n", limitName(l), len(rs))
		fmt.Printf("| call | time | sidecar peak RSS (VmHWM) |\n|---|---|---|\n")
		for i, c := range largeCalls {
			t := benchproc.Median(colL(rs, func(r largeRun) time.Duration { return r.took[i] }))
			p := benchproc.Median(colL(rs, func(r largeRun) int64 { return r.peak[i] }))
			fmt.Printf("| %s | %v | %d MiB |\n", c, t.Round(time.Millisecond), p>>10)
		}
		peak := benchproc.Median(colL(rs, largeRun.max))
		fmt.Printf("| whole sequence | | %d MiB: %s |\n", peak>>10, benchproc.Verdict(peak <= 300<<10, "met (≤ 300 MiB)", "MISSED (target ≤ 300 MiB)"))
	}
}

func colL[T any](rs []largeRun, f func(largeRun) T) []T {
	out := make([]T, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

// largeSteps is the sequence's calls, in largeCalls' order, made with *cl
// (the client changes when the sidecar is restarted).
func largeSteps(cl *workspacev1.CheckpointServiceClient, proj string, files, bytes int) []func() error {
	ws := &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: "big"}
	ctx := context.Background()
	one := strings.TrimPrefix(largeFile("", 0), "/")
	var first string
	list := func() error {
		// The last file: the manifests' paths are sorted, so it is the
		// one a streamed lookup reaches last.
		last := strings.TrimPrefix(largeFile("", files-1), "/")
		l, err := (*cl).ListCheckpoints(ctx, &workspacev1.ListCheckpointsRequest{Workspace: ws, Path: last})
		if err == nil && len(l.GetCheckpoints()) != 2 {
			err = fmt.Errorf("list holding %s: %d checkpoints, want 2", last, len(l.GetCheckpoints()))
		}
		return err
	}
	steps := []func() error{
		func() error {
			c, err := (*cl).CreateCheckpoint(ctx, &workspacev1.CreateCheckpointRequest{Workspace: ws, Label: "first"})
			first = c.GetId()
			return err
		},
		func() error {
			buf := make([]byte, bytes)
			for i := range 10 {
				rand.Read(buf)
				if err := os.WriteFile(largeFile(proj, i*(files/10)), buf, 0o644); err != nil {
					return err
				}
			}
			_, err := (*cl).CreateCheckpoint(ctx, &workspacev1.CreateCheckpointRequest{Workspace: ws, Label: "second"})
			return err
		},
		func() error {
			cmp, err := (*cl).CompareCheckpoint(ctx, &workspacev1.CompareCheckpointRequest{Workspace: ws, CheckpointId: first})
			if err == nil && len(cmp.GetChanges()) != 10 {
				err = fmt.Errorf("compare: %d changes, want 10", len(cmp.GetChanges()))
			}
			return err
		},
		func() error {
			cmp, err := (*cl).CompareCheckpoint(ctx, &workspacev1.CompareCheckpointRequest{Workspace: ws, CheckpointId: first, Path: one})
			if err != nil {
				return err
			}
			_, err = (*cl).RestoreCheckpoint(ctx, &workspacev1.RestoreCheckpointRequest{Workspace: ws, CheckpointId: first, Path: one, PlanToken: cmp.GetPlanToken()})
			return err
		},
		list,
		list,
	}
	return steps
}
