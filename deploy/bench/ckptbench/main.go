// Command ckptbench measures checkpoints (issue #15) beside `tar -c` of the
// same tree in the same run: a first checkpoint of a 10,000-file / 100 MiB
// project against tar writing an archive of it and fsyncing that archive
// (the headline baseline: a checkpoint is durable when it returns, and
// docs/architecture.md ("Speed work") compares durable work with the physical limit of the same
// durable work, not with a peer that does less) and, printed beside it,
// plain tar; a second checkpoint after 10 files changed; compare and restore
// of one file; and the sidecar's peak memory growth during each (VmHWM,
// reset through /proc/PID/clear_refs before each operation).
//
// The sidecar is the real agent-sidecar binary (built here), driven over
// gRPC on 127.0.0.1. Runs are interleaved (tar, checkpoint, tar, ...) and
// the median is reported with every run's value.
//
// Then the large project of issue #23 (large.go): 199,000 files, each call
// of an operator's sequence timed, with the sidecar's peak memory, with and
// without GOMEMLIMIT.
//
// Usage (from the repository root): go run ./deploy/bench/ckptbench [-runs 5] [-files 10000] [-mib 100]
// [-large 199000] [-large-runs 3] [-gomemlimit 400MiB] [-only-large]
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/deploy/bench/benchproc"
)

func main() {
	runs := flag.Int("runs", 5, "interleaved runs (the median is reported)")
	files := flag.Int("files", 10000, "files in the project")
	mib := flag.Int("mib", 100, "MiB in the project")
	dir := flag.String("dir", "", "work directory (default: bin/ckptbench, on the repository's disk)")
	large := flag.Int("large", 199000, "files of the large project (0: skip it)")
	largeBytes := flag.Int("large-bytes", 512, "bytes of each file of the large project")
	largeRuns := flag.Int("large-runs", 3, "rounds of the large project (each: without and with -gomemlimit)")
	limit := flag.String("gomemlimit", "400MiB", "GOMEMLIMIT of the sidecar in the large project's second run of each round")
	onlyLarge := flag.Bool("only-large", false, "run only the large project")
	flag.Parse()
	if !*onlyLarge {
		benchproc.Exit("ckptbench", run(*runs, *files, *mib, *dir))
	}
	if *large > 0 {
		benchproc.Exit("ckptbench", runLarge(*largeRuns, *large, *largeBytes, *limit, ""))
	}
}

type sample struct {
	tar, tarFsync, first, second, compare, restore time.Duration
	memFirst, memSecond                            int64 // KiB of VmHWM growth
}

func run(runs, files, mib int, dir string) error {
	work, root, proj, err := workDir(dir, "ckptbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	fmt.Printf("preparing %d files, %d MiB ...\n", files, mib)
	size := int64(mib) << 20 / int64(files)
	buf := make([]byte, size)
	if err := makeTree(proj, files, buf); err != nil {
		return err
	}
	sc, err := benchproc.StartSidecar(work, "", benchproc.SidecarConfig(root), "rpc")
	if err != nil {
		return err
	}
	defer sc.Stop()
	cl := workspacev1.NewCheckpointServiceClient(sc.Conn)
	ws := &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: "big"}
	ctx := context.Background()

	var out []sample
	for r := range runs {
		s, err := measure(ctx, cl, ws, sc, work, proj, files, buf)
		if err != nil {
			return err
		}
		fmt.Printf("run %d: tar %v, tar+fsync %v, first %v, second %v, compare %v, restore %v, mem first %d KiB, second %d KiB\n",
			r+1, s.tar.Round(time.Millisecond), s.tarFsync.Round(time.Millisecond), s.first.Round(time.Millisecond), s.second.Round(time.Millisecond),
			s.compare.Round(time.Microsecond), s.restore.Round(time.Microsecond), s.memFirst, s.memSecond)
		out = append(out, s)
	}
	report(out)
	return nil
}

// makeTree writes files files of random bytes (len(buf) each) under proj,
// a hundred per directory.
func makeTree(proj string, files int, buf []byte) error {
	for i := range files {
		p := filepath.Join(proj, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d.bin", i))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
		}
		rand.Read(buf)
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// measure is one run: tar (+ fsync) of the tree as the baseline, a first
// checkpoint, ten files changed and a second one, a compare and a restore
// of one changed file; then it empties the store for the next run.
func measure(ctx context.Context, cl workspacev1.CheckpointServiceClient, ws *workspacev1.WorkspaceRef, sc *benchproc.Proc, work, proj string, files int, buf []byte) (sample, error) {
	var s sample
	// Baseline: tar of the same tree into an archive on the same disk,
	// then an fsync of that archive (what makes it durable).
	archive := filepath.Join(work, "tree.tar")
	t0 := time.Now()
	if o, err := exec.Command("tar", "-cf", archive, "-C", proj, ".").CombinedOutput(); err != nil {
		return s, fmt.Errorf("tar: %v %s", err, o)
	}
	s.tar = time.Since(t0)
	if err := fsyncFile(archive); err != nil {
		return s, err
	}
	s.tarFsync = time.Since(t0)
	os.Remove(archive)

	// A first checkpoint (the store is emptied between runs).
	rss := benchproc.ResetPeak(sc.PID)
	t0 = time.Now()
	c1, err := cl.CreateCheckpoint(ctx, &workspacev1.CreateCheckpointRequest{Workspace: ws, Label: "first"})
	if err != nil {
		return s, err
	}
	s.first = time.Since(t0)
	s.memFirst = benchproc.StatusKB(sc.PID, "VmHWM") - rss

	// Ten files change; a second checkpoint.
	for i := range 10 {
		n := i * (files / 10) // spread over the tree, whatever -files says
		p := filepath.Join(proj, fmt.Sprintf("d%03d", n/100), fmt.Sprintf("f%05d.bin", n))
		rand.Read(buf)
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			return s, err
		}
	}
	rss = benchproc.ResetPeak(sc.PID)
	t0 = time.Now()
	if _, err := cl.CreateCheckpoint(ctx, &workspacev1.CreateCheckpointRequest{Workspace: ws, Label: "second"}); err != nil {
		return s, err
	}
	s.second = time.Since(t0)
	s.memSecond = benchproc.StatusKB(sc.PID, "VmHWM") - rss

	// Compare and restore one changed file.
	one := fmt.Sprintf("d%03d/f%05d.bin", 0, 0)
	t0 = time.Now()
	cmp, err := cl.CompareCheckpoint(ctx, &workspacev1.CompareCheckpointRequest{Workspace: ws, CheckpointId: c1.GetId(), Path: one})
	if err != nil {
		return s, err
	}
	s.compare = time.Since(t0)
	if len(cmp.GetChanges()) != 1 {
		return s, fmt.Errorf("compare of one changed file: %d changes", len(cmp.GetChanges()))
	}
	t0 = time.Now()
	if _, err := cl.RestoreCheckpoint(ctx, &workspacev1.RestoreCheckpointRequest{Workspace: ws, CheckpointId: c1.GetId(), Path: one, PlanToken: cmp.GetPlanToken()}); err != nil {
		return s, err
	}
	s.restore = time.Since(t0)
	// Empty the store for the next run's first checkpoint.
	l, err := cl.ListCheckpoints(ctx, &workspacev1.ListCheckpointsRequest{Workspace: ws})
	if err != nil {
		return s, err
	}
	for _, c := range l.GetCheckpoints() {
		if _, err := cl.DeleteCheckpoint(ctx, &workspacev1.DeleteCheckpointRequest{Workspace: ws, CheckpointId: c.GetId()}); err != nil {
			return s, err
		}
	}
	return s, nil
}

// fsyncFile fsyncs the file at p.
func fsyncFile(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func col[T any](ss []sample, f func(sample) T) []T {
	out := make([]T, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

func ratios(ss []sample, num, den func(sample) time.Duration) string {
	var v []string
	var r []float64
	for _, s := range ss {
		x := float64(num(s)) / float64(den(s))
		r = append(r, x)
		v = append(v, strconv.FormatFloat(x, 'f', 3, 64))
	}
	return fmt.Sprintf("%.3f× (%s)", benchproc.Median(r), strings.Join(v, ", "))
}

func report(ss []sample) {
	fmt.Println()
	fmt.Printf("| figure | median | target |\n|---|---|---|\n")
	fmt.Printf("| tar -c (archive on the same disk) | %v | |\n", benchproc.Median(col(ss, func(s sample) time.Duration { return s.tar })).Round(time.Millisecond))
	fmt.Printf("| tar -c + fsync of the archive | %v | |\n", benchproc.Median(col(ss, func(s sample) time.Duration { return s.tarFsync })).Round(time.Millisecond))
	fmt.Printf("| first checkpoint | %v | |\n", benchproc.Median(col(ss, func(s sample) time.Duration { return s.first })).Round(time.Millisecond))
	fmt.Printf("| second checkpoint | %v | |\n", benchproc.Median(col(ss, func(s sample) time.Duration { return s.second })).Round(time.Millisecond))
	fmt.Printf("| first checkpoint / (tar -c + fsync) (headline: both durable) | %s | ≤ 1.5× |\n", ratios(ss, func(s sample) time.Duration { return s.first }, func(s sample) time.Duration { return s.tarFsync }))
	fmt.Printf("| first checkpoint / plain tar -c (not durable) | %s | |\n", ratios(ss, func(s sample) time.Duration { return s.first }, func(s sample) time.Duration { return s.tar }))
	fmt.Printf("| second checkpoint (10 files changed) / first | %s | ≤ 0.1× |\n", ratios(ss, func(s sample) time.Duration { return s.second }, func(s sample) time.Duration { return s.first }))
	fmt.Printf("| compare one file / first checkpoint | %s | ≤ 0.05× |\n", ratios(ss, func(s sample) time.Duration { return s.compare }, func(s sample) time.Duration { return s.first }))
	fmt.Printf("| restore one file / first checkpoint | %s | ≤ 0.05× |\n", ratios(ss, func(s sample) time.Duration { return s.restore }, func(s sample) time.Duration { return s.first }))
	fmt.Printf("| sidecar peak memory growth, first checkpoint | %d KiB | < 64 MiB |\n", benchproc.Median(col(ss, func(s sample) int64 { return s.memFirst })))
	fmt.Printf("| sidecar peak memory growth, second checkpoint | %d KiB | < 64 MiB |\n", benchproc.Median(col(ss, func(s sample) int64 { return s.memSecond })))
}

// workDir empties dir (default bin/<name>) and lays out the volume the
// benchmark's sidecar serves: work (dir, absolute, for the caller to
// remove), root (work/vol, with codex/) and proj (the project "big").
func workDir(dir, name string) (work, root, proj string, err error) {
	if dir == "" {
		dir = filepath.Join("bin", name)
	}
	if err = os.RemoveAll(dir); err != nil {
		return
	}
	if work, err = filepath.Abs(dir); err != nil {
		return
	}
	root = filepath.Join(work, "vol")
	proj = filepath.Join(root, "projects", "big")
	if err = os.MkdirAll(filepath.Join(root, "codex"), 0o755); err != nil {
		os.RemoveAll(work)
	}
	return
}
