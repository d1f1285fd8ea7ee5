package sidecar_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// Benchmarks of the gRPC surface against the real binary over loopback
// (docs/benchmarks/sidecar-rpc.md):
//
//	go test -run '^$' -bench . -benchtime 3s ./sidecar/
func BenchmarkRPC(b *testing.B) {
	sc := sidecartest.Start(b, sidecartest.Options{})
	c := sc.Dial(b)
	ctx := context.Background()
	if _, err := c.CreateProject(ctx, &workspacev1.CreateProjectRequest{Name: "bench"}); err != nil {
		b.Fatal(err)
	}
	root := filepath.Join(sc.ProjectsDir, "bench")
	var files []string
	for i := 0; i < 1000; i++ {
		files = append(files, fmt.Sprintf("dir/f%04d.txt", i))
	}
	for _, f := range files {
		writeFileB(b, root, f, strings.Repeat("x", 4096))
	}
	sidecartest.Chown(b, root)
	ws := proj("bench")

	b.Run("GetFile4KiB", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: ws, Path: files[i%len(files)]}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("GetFile4KiBParallel16", func(b *testing.B) {
		b.SetParallelism(8) // 2 cores x 8 = 16 goroutines
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, err := c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: ws, Path: files[i%len(files)]}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	})
	b.Run("ListEntries1000Page500", func(b *testing.B) {
		for b.Loop() {
			r, err := c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: ws, Path: "dir", PageSize: 500})
			if err != nil || len(r.GetEntries()) != 500 {
				b.Fatal(err)
			}
		}
	})
	b.Run("UpdateFile4KiB", func(b *testing.B) {
		f, err := c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: ws, Path: files[0]})
		if err != nil {
			b.Fatal(err)
		}
		rev := f.GetEntry().GetRevision()
		content := strings.Repeat("y", 4096)
		for i := 0; b.Loop(); i++ {
			e, err := c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: ws, Path: files[0], Content: content[:4096-i%2], ExpectedRevision: rev})
			if err != nil {
				b.Fatal(err)
			}
			rev = e.GetRevision()
		}
	})
}

func writeFileB(b *testing.B, root, rel, content string) {
	b.Helper()
	if err := mkdirWrite(filepath.Join(root, rel), content); err != nil {
		b.Fatal(err)
	}
}
