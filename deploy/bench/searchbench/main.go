// Command searchbench measures content search (issue #25) on a tree of
// -files files and -mib MiB in all, warm cache: the real agent-sidecar's
// Search stream (gRPC over mutual TLS on 127.0.0.1) and davfs/search in
// this process, beside ripgrep on the same tree in the same run with the
// equivalent options (rg -F --no-ignore --hidden -c: a case-sensitive
// literal, every file, counted lines), medians of -runs interleaved runs.
// Every peer must find the same number of matching lines. Target: the
// sidecar within 1.5x of rg.
//
// Usage (from the repository root): go run ./deploy/bench/searchbench [-files 10000] [-mib 100] [-runs 7]
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/metadata"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/search"
	"github.com/agentworkspace/files/deploy/bench/benchproc"
	"github.com/agentworkspace/files/internal/rpcmeta"
)

const needle = "xq_needle_marker"

func main() {
	files := flag.Int("files", 10000, "files in the tree")
	mib := flag.Int("mib", 100, "MiB in all")
	runs := flag.Int("runs", 7, "interleaved runs of each peer")
	flag.Parse()
	benchproc.Exit("searchbench", run(*files, *mib, *runs))
}

func run(files, mib, runs int) error {
	if _, err := exec.LookPath("rg"); err != nil {
		return errors.New("rg (ripgrep) is missing: make setup installs it")
	}
	work, err := os.MkdirTemp("", "searchbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	c := benchproc.SidecarConfig(work)
	tree := filepath.Join(c.Services.Project.ProjectsRootDir, "bench")
	want, err := writeTree(tree, files, int64(mib)<<20)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Services.Project.CodexHomeDir, 0o755); err != nil {
		return err
	}
	sc, err := benchproc.StartSidecar(work, "", c, "rpc")
	if err != nil {
		return err
	}
	defer sc.Stop()
	fs, err := davfs.Open(davfs.Config{ProjectsRoot: c.Services.Project.ProjectsRootDir, CodexHome: c.Services.Project.CodexHomeDir})
	if err != nil {
		return err
	}
	defer fs.Close()
	client := workspacev1.NewWorkspaceServiceClient(sc.Conn)
	peers := []struct {
		name string
		f    func() (int, error)
	}{
		{"rg -F --no-ignore --hidden -c", func() (int, error) { return rg(tree) }},
		{"davfs/search (in process)", func() (int, error) { return inProcess(fs) }},
		{"sidecar Search (gRPC stream)", func() (int, error) { return viaSidecar(client) }},
	}
	times := make([][]time.Duration, len(peers))
	// One warm-up round (page cache, the sidecar's first connection), then the measured ones.
	errs := benchproc.Interleave(runs+1, len(peers), func(round, p int) error {
		start := time.Now()
		n, err := peers[p].f()
		d := time.Since(start)
		if err != nil {
			return err
		}
		if n != want {
			return fmt.Errorf("%s found %d matching lines, want %d", peers[p].name, n, want)
		}
		if round > 0 {
			times[p] = append(times[p], d)
		}
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Printf("content search, %d files, %d MiB, %d matching lines, warm cache, medians of %d interleaved runs\n", files, mib, want, runs)
	base := benchproc.Median(times[0])
	for i, p := range peers {
		m := benchproc.Median(times[i])
		fmt.Printf("  %-32s %8.1f ms  %.2fx rg\n", p.name, float64(m.Microseconds())/1000, float64(m)/float64(base))
	}
	ratio := float64(benchproc.Median(times[2])) / float64(base)
	fmt.Println(benchproc.Verdict(ratio <= 1.5, fmt.Sprintf("PASS: the sidecar's search is %.2fx rg (target <= 1.5x)", ratio),
		fmt.Sprintf("MISS: the sidecar's search is %.2fx rg (target <= 1.5x)", ratio)))
	return nil
}

// writeTree writes files text files (100 per directory) of about total
// bytes in all; one in a hundred holds the needle on one line. It returns
// the number of matching lines.
func writeTree(root string, files int, total int64) (int, error) {
	rnd := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the quick brown fox jumps over a lazy dog func return value error nil context package import type struct")
	per := total / int64(files)
	want := 0
	var b bytes.Buffer
	for i := range files {
		b.Reset()
		for int64(b.Len()) < per {
			for w := 0; w < 10; w++ {
				b.WriteString(words[rnd.IntN(len(words))])
				b.WriteByte(' ')
			}
			b.WriteByte('\n')
		}
		if i%100 == 7 {
			b.WriteString("found " + needle + " here\n")
			want++
		}
		p := filepath.Join(root, "d"+strconv.Itoa(i/100), "f"+strconv.Itoa(i)+".txt")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return 0, err
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			return 0, err
		}
	}
	return want, nil
}

// rg counts the matching lines with ripgrep (the sum of its per-file counts).
func rg(tree string) (int, error) {
	out, err := exec.Command("rg", "-F", "--no-ignore", "--hidden", "-c", needle, tree).Output()
	if err != nil {
		return 0, fmt.Errorf("rg: %w", err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		_, c, _ := strings.Cut(sc.Text()[strings.LastIndexByte(sc.Text(), ':'):], ":")
		v, err := strconv.Atoi(c)
		if err != nil {
			return 0, err
		}
		n += v
	}
	return n, nil
}

var opts = search.Options{Query: needle, CaseSensitive: true, MaxResults: search.MaxMaxResults, MaxBytes: search.MaxMaxBytes, MaxFileBytes: search.MaxMaxFileBytes, Timeout: search.MaxTimeout}

func inProcess(fs *davfs.FS) (int, error) {
	do, err := search.Search(context.Background(), fs, davfs.Workspace{Scope: davfs.ScopeProject, Project: "bench"}, "", opts)
	if err != nil {
		return 0, err
	}
	n := 0
	_, err = do(func(search.Result) error { n++; return nil })
	return n, err
}

func viaSidecar(c workspacev1.WorkspaceServiceClient) (int, error) {
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs(rpcmeta.RequestID, "searchbench", rpcmeta.Operator, "bench"))
	st, err := c.Search(ctx, &workspacev1.SearchRequest{
		Workspace: &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: "bench"},
		Query:     needle, CaseSensitive: true, MaxResults: int32(opts.MaxResults), MaxBytes: opts.MaxBytes,
		MaxFileBytes: opts.MaxFileBytes, TimeoutMs: int32(opts.Timeout.Milliseconds()),
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
		if m.GetMatch() != nil {
			n++
		}
	}
}
