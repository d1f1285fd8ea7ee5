package sidecar_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/internal/proctest"
	"github.com/agentworkspace/files/internal/rpcmeta"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

func TestProjects(t *testing.T) {
	sc := sidecartest.Start(t, sidecartest.Options{Configure: func(c *sidecar.Config) { c.Services.Project.MaxPageSize = 3 }})
	c := sc.Dial(t)
	ctx := ctxT(t)

	// Existing content: a plain (non-git) project, a denylisted dir, a
	// symlink to a project, a regular file. Only "plain" is a project.
	mkdir(t, sc.ProjectsDir, "plain/src")
	mkdir(t, sc.ProjectsDir, "node_modules")
	writeFile(t, sc.ProjectsDir, "notes.txt", "not a project")
	if err := os.Symlink("plain", filepath.Join(sc.ProjectsDir, "link")); err != nil {
		t.Fatal(err)
	}

	t.Run("CreateProject runs git init", func(t *testing.T) {
		for _, name := range []string{"beta", "alpha", "gamma.v2", "delta_1"} {
			p := must[*workspacev1.Project](t)(c.CreateProject(ctx, &workspacev1.CreateProjectRequest{Name: name}))
			if p.GetName() != name || !p.GetGitInitialized() || p.GetRevision() == "" || p.GetModifiedAt() == nil {
				t.Errorf("CreateProject(%s) = %v", name, p)
			}
		}
		fi, err := os.Lstat(filepath.Join(sc.ProjectsDir, "alpha", ".git"))
		if err != nil || !fi.IsDir() {
			t.Fatalf(".git: %v %v", fi, err)
		}
		if head := readFile(t, filepath.Join(sc.ProjectsDir, "alpha", ".git", "HEAD")); strings.TrimSpace(head) != "ref: refs/heads/main" {
			t.Errorf(".git/HEAD = %q, want the main branch", head)
		}
		fi, _ = os.Stat(filepath.Join(sc.ProjectsDir, "alpha"))
		if fi.Mode().Perm() != 0o755 {
			t.Errorf("project mode %v, want 0755", fi.Mode().Perm())
		}
		// .git is never listed.
		l := must[*workspacev1.ListEntriesResponse](t)(c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: proj("alpha")}))
		if len(l.GetEntries()) != 0 {
			t.Errorf("new project lists %v, want nothing (.git hidden)", l.GetEntries())
		}
		_, err = c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: proj("alpha"), Path: ".git"})
		wantErr(t, err, codes.PermissionDenied, "DENYLISTED")
	})

	t.Run("CreateProject errors", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			code   codes.Code
			reason string
		}{
			{"", codes.InvalidArgument, "INVALID_NAME"},
			{".", codes.InvalidArgument, "INVALID_NAME"},
			{"..", codes.InvalidArgument, "INVALID_NAME"},
			{"-dash", codes.InvalidArgument, "INVALID_NAME"},
			{"a/b", codes.InvalidArgument, "INVALID_NAME"},
			{"has space", codes.InvalidArgument, "INVALID_NAME"},
			{strings.Repeat("x", 129), codes.InvalidArgument, "INVALID_NAME"},
			{"node_modules", codes.PermissionDenied, "DENYLISTED"},
			{"alpha", codes.AlreadyExists, "ALREADY_EXISTS"},
			{"plain", codes.AlreadyExists, "ALREADY_EXISTS"},
			{"notes.txt", codes.AlreadyExists, "ALREADY_EXISTS"},
		} {
			_, err := c.CreateProject(ctx, &workspacev1.CreateProjectRequest{Name: tc.name})
			wantErr(t, err, tc.code, tc.reason)
		}
		if readFile(t, filepath.Join(sc.ProjectsDir, "notes.txt")) != "not a project" {
			t.Error("existing file changed")
		}
		if _, err := os.Stat(filepath.Join(sc.ProjectsDir, "plain", ".git")); !os.IsNotExist(err) {
			t.Error("existing project was git-initialised")
		}
	})

	t.Run("ListProjects", func(t *testing.T) {
		var names []string
		var gitInit []bool
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 5 {
				t.Fatal("too many pages")
			}
			r := must[*workspacev1.ListProjectsResponse](t)(c.ListProjects(ctx, &workspacev1.ListProjectsRequest{PageSize: 2, Cursor: cursor}))
			if len(r.GetProjects()) > 2 {
				t.Fatalf("page of %d", len(r.GetProjects()))
			}
			for _, p := range r.GetProjects() {
				names = append(names, p.GetName())
				gitInit = append(gitInit, p.GetGitInitialized())
			}
			if cursor = r.GetNextCursor(); cursor == "" {
				break
			}
		}
		want := []string{"alpha", "beta", "delta_1", "gamma.v2", "plain"}
		if strings.Join(names, ",") != strings.Join(want, ",") {
			t.Errorf("projects %v, want %v (no denylisted dir, symlink or file)", names, want)
		}
		if gitInit[len(gitInit)-1] || !gitInit[0] {
			t.Errorf("git_initialized %v", gitInit)
		}
		_, err := c.ListProjects(ctx, &workspacev1.ListProjectsRequest{PageSize: 4})
		wantErr(t, err, codes.ResourceExhausted, "PAGE_SIZE_TOO_LARGE")
		_, err = c.ListProjects(ctx, &workspacev1.ListProjectsRequest{Cursor: "not-a-cursor"})
		wantErr(t, err, codes.InvalidArgument, "INVALID_CURSOR")
	})

	t.Run("DeleteProject", func(t *testing.T) {
		_, err := c.DeleteProject(ctx, &workspacev1.DeleteProjectRequest{Name: "beta", ConfirmName: "Beta"})
		wantErr(t, err, codes.InvalidArgument, "CONFIRMATION_MISMATCH")
		if _, err := os.Stat(filepath.Join(sc.ProjectsDir, "beta", ".git")); err != nil {
			t.Fatalf("beta damaged after a refused delete: %v", err)
		}
		_, err = c.DeleteProject(ctx, &workspacev1.DeleteProjectRequest{Name: "nope", ConfirmName: "nope"})
		wantErr(t, err, codes.NotFound, "PROJECT_NOT_FOUND")
		_, err = c.DeleteProject(ctx, &workspacev1.DeleteProjectRequest{Name: "link", ConfirmName: "link"})
		if err == nil {
			t.Error("deleting a symlinked project succeeded")
		}
		_, err = c.DeleteProject(ctx, &workspacev1.DeleteProjectRequest{Name: "node_modules", ConfirmName: "node_modules"})
		if err == nil {
			t.Error("deleting a denylisted directory succeeded")
		}
		writeFile(t, sc.ProjectsDir, "beta/deep/a/b.txt", "x")
		must[*workspacev1.DeleteProjectResponse](t)(c.DeleteProject(ctx, &workspacev1.DeleteProjectRequest{Name: "beta", ConfirmName: "beta"}))
		if _, err := os.Lstat(filepath.Join(sc.ProjectsDir, "beta")); !os.IsNotExist(err) {
			t.Errorf("beta still there: %v", err)
		}
		if _, err := os.Stat(filepath.Join(sc.ProjectsDir, "plain", "src")); err != nil {
			t.Errorf("another project damaged: %v", err)
		}
	})
}

func TestGitInitRollback(t *testing.T) {
	// A fake git first in PATH that fails like a broken git would.
	bin := proctest.TempDir(t, "fakegit-")
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\necho 'fatal: simulated failure' >&2\nexit 128\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sc := sidecartest.Start(t, sidecartest.Options{Env: []string{"PATH=" + bin + ":" + os.Getenv("PATH")}})
	c := sc.Dial(t)
	ctx := ctxT(t)

	_, err := c.CreateProject(ctx, &workspacev1.CreateProjectRequest{Name: "doomed"})
	wantErr(t, err, codes.Internal, "GIT_INIT_FAILED")
	if strings.Contains(err.Error(), sc.ProjectsDir) || strings.Contains(err.Error(), "simulated") {
		t.Errorf("client message leaks detail: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(sc.ProjectsDir, "doomed")); !os.IsNotExist(err) {
		t.Errorf("project not rolled back: %v", err)
	}
	r := must[*workspacev1.ListProjectsResponse](t)(c.ListProjects(ctx, &workspacev1.ListProjectsRequest{}))
	if len(r.GetProjects()) != 0 {
		t.Errorf("projects after rollback: %v", r.GetProjects())
	}
	if got := metric(t, sc, "sidecar_git_init_failures_total"); got != "1" {
		t.Errorf("git init failures metric = %q, want 1", got)
	}
	if !sc.WaitLog("simulated failure", 5*time.Second) {
		t.Error("git's output is not in the log")
	}
}

func TestEntries(t *testing.T) {
	sc := sidecartest.Start(t, sidecartest.Options{Configure: func(c *sidecar.Config) {
		c.Services.Project.MaxEditableFileSize = 64
		c.Services.Project.MaxPageSize = 10
	}})
	c := sc.Dial(t)
	ctx := ctxT(t)
	must[*workspacev1.Project](t)(c.CreateProject(ctx, &workspacev1.CreateProjectRequest{Name: "demo"}))
	root := filepath.Join(sc.ProjectsDir, "demo")
	writeFile(t, root, "b.txt", "hello\n")
	writeFile(t, root, "a.bin", "bin\x00ary")
	writeFile(t, root, "big.txt", strings.Repeat("x", 65))
	writeFile(t, root, "latin1.txt", "caf\xe9")
	writeFile(t, root, "src/main.go", "package main\n")
	mkdir(t, root, "node_modules/x")
	writeFile(t, root, "canary.txt", "canary")
	if err := os.Symlink("canary.txt", filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src", filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	ws := proj("demo")

	t.Run("ListEntries", func(t *testing.T) {
		r := must[*workspacev1.ListEntriesResponse](t)(c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: ws}))
		var names []string
		for _, e := range r.GetEntries() {
			names = append(names, e.GetName())
			if e.GetRevision() == "" || e.GetPath() != e.GetName() {
				t.Errorf("entry %v", e)
			}
		}
		if got, want := strings.Join(names, ","), "src,a.bin,b.txt,big.txt,canary.txt,latin1.txt"; got != want {
			t.Errorf("entries %s, want %s (dirs first, no symlinks, no denylisted)", got, want)
		}
		if r.GetDirectoryRevision() == "" {
			t.Error("no directory_revision")
		}
		sub := must[*workspacev1.ListEntriesResponse](t)(c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: ws, Path: "src"}))
		if len(sub.GetEntries()) != 1 || sub.GetEntries()[0].GetPath() != "src/main.go" ||
			sub.GetEntries()[0].GetType() != workspacev1.EntryType_ENTRY_TYPE_FILE || sub.GetEntries()[0].GetSize() != 13 {
			t.Errorf("src: %v", sub.GetEntries())
		}
	})

	t.Run("ListEntries paging and stale cursor", func(t *testing.T) {
		p1 := must[*workspacev1.ListEntriesResponse](t)(c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: ws, PageSize: 2}))
		if len(p1.GetEntries()) != 2 || p1.GetNextCursor() == "" {
			t.Fatalf("page 1: %v", p1)
		}
		p2 := must[*workspacev1.ListEntriesResponse](t)(c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: ws, PageSize: 2, Cursor: p1.GetNextCursor()}))
		if len(p2.GetEntries()) != 2 || p2.GetEntries()[0].GetName() != "b.txt" {
			t.Fatalf("page 2: %v", p2.GetEntries())
		}
		// A cursor belongs to its workspace and path.
		_, err := c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: ws, Path: "src", PageSize: 2, Cursor: p1.GetNextCursor()})
		if err == nil {
			t.Error("a cursor was accepted for another path")
		}
		writeFile(t, root, "new.txt", "n")
		_, err = c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: ws, PageSize: 2, Cursor: p1.GetNextCursor()})
		wantErr(t, err, codes.Aborted, "CURSOR_STALE")
		os.Remove(filepath.Join(root, "new.txt"))
		_, err = c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: ws, PageSize: 11})
		wantErr(t, err, codes.ResourceExhausted, "PAGE_SIZE_TOO_LARGE")
	})

	t.Run("ListEntries errors", func(t *testing.T) {
		for _, tc := range []struct {
			ws     *workspacev1.WorkspaceRef
			path   string
			code   codes.Code
			reason string
		}{
			{ws, "missing", codes.NotFound, "NOT_FOUND"},
			{ws, "b.txt", codes.FailedPrecondition, "NOT_A_DIRECTORY"},
			{ws, "node_modules", codes.PermissionDenied, "DENYLISTED"},
			{ws, "node_modules/x", codes.PermissionDenied, "DENYLISTED"},
			{ws, "linkdir", codes.PermissionDenied, "SYMLINK"},
			{ws, "../demo", codes.InvalidArgument, "INVALID_PATH"},
			{ws, "/etc", codes.InvalidArgument, "INVALID_PATH"},
			{ws, "src//x", codes.InvalidArgument, "INVALID_PATH"},
			{ws, "./src", codes.InvalidArgument, "INVALID_PATH"},
			{ws, "a\x00b", codes.InvalidArgument, "INVALID_PATH"},
			{ws, strings.Repeat("a/", 64) + "a", codes.ResourceExhausted, "PATH_TOO_DEEP"},
			{ws, strings.Repeat("a", 4097), codes.ResourceExhausted, "PATH_TOO_LONG"},
			{proj("nope"), "", codes.NotFound, "PROJECT_NOT_FOUND"},
			{proj("node_modules"), "", codes.PermissionDenied, "DENYLISTED"},
			{proj("link"), "", codes.PermissionDenied, "SYMLINK"},
			{&workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT}, "", codes.InvalidArgument, "INVALID_WORKSPACE"},
			{&workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_GLOBAL, ProjectName: "demo"}, "", codes.InvalidArgument, "INVALID_WORKSPACE"},
			{&workspacev1.WorkspaceRef{}, "", codes.InvalidArgument, "INVALID_WORKSPACE"},
			{nil, "", codes.InvalidArgument, "INVALID_WORKSPACE"},
			{global, "sessions", codes.PermissionDenied, "OUTSIDE_GLOBAL"},
		} {
			if tc.ws != nil && tc.ws.GetProjectName() == "link" {
				if err := os.Symlink("demo", filepath.Join(sc.ProjectsDir, "link")); err != nil && !os.IsExist(err) {
					t.Fatal(err)
				}
			}
			_, err := c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: tc.ws, Path: tc.path})
			t.Run(tc.reason+"_"+tc.path, func(t *testing.T) { wantErr(t, err, tc.code, tc.reason) })
		}
	})

	t.Run("GetFile", func(t *testing.T) {
		f := must[*workspacev1.GetFileResponse](t)(c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: ws, Path: "b.txt"}))
		if f.GetContent() != "hello\n" || !f.GetEntry().GetEditable() || f.GetEntry().GetSize() != 6 {
			t.Errorf("b.txt: %v", f)
		}
		for path, reason := range map[string]workspacev1.NonEditableReason{
			"a.bin":      workspacev1.NonEditableReason_NON_EDITABLE_REASON_BINARY,
			"big.txt":    workspacev1.NonEditableReason_NON_EDITABLE_REASON_TOO_LARGE,
			"latin1.txt": workspacev1.NonEditableReason_NON_EDITABLE_REASON_NOT_UTF8,
		} {
			f := must[*workspacev1.GetFileResponse](t)(c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: ws, Path: path}))
			if f.GetContent() != "" || f.GetEntry().GetEditable() || f.GetEntry().GetNonEditableReason() != reason || f.GetEntry().GetRevision() == "" {
				t.Errorf("%s: %v", path, f)
			}
		}
		_, err := c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: ws, Path: "src"})
		wantErr(t, err, codes.FailedPrecondition, "NOT_A_FILE")
		_, err = c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: ws, Path: "nope.txt"})
		wantErr(t, err, codes.NotFound, "NOT_FOUND")
		_, err = c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: ws, Path: "link.txt"})
		wantErr(t, err, codes.PermissionDenied, "SYMLINK")
	})

	t.Run("CreateEntry", func(t *testing.T) {
		e := must[*workspacev1.Entry](t)(c.CreateEntry(ctx, &workspacev1.CreateEntryRequest{Workspace: ws, ParentPath: "src", Name: "util",
			Type: workspacev1.EntryType_ENTRY_TYPE_DIRECTORY}))
		if e.GetPath() != "src/util" || e.GetType() != workspacev1.EntryType_ENTRY_TYPE_DIRECTORY {
			t.Errorf("dir: %v", e)
		}
		e = must[*workspacev1.Entry](t)(c.CreateEntry(ctx, &workspacev1.CreateEntryRequest{Workspace: ws, ParentPath: "src/util", Name: "u.go",
			Type: workspacev1.EntryType_ENTRY_TYPE_FILE}))
		if e.GetPath() != "src/util/u.go" || e.GetSize() != 0 || e.GetRevision() == "" {
			t.Errorf("file: %v", e)
		}
		fi, err := os.Stat(filepath.Join(root, "src/util/u.go"))
		if err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("file mode: %v %v", fi, err)
		}
		for _, tc := range []struct {
			parent, name string
			typ          workspacev1.EntryType
			code         codes.Code
			reason       string
		}{
			{"src", "util", workspacev1.EntryType_ENTRY_TYPE_FILE, codes.AlreadyExists, "ALREADY_EXISTS"},
			{"missing", "x", workspacev1.EntryType_ENTRY_TYPE_FILE, codes.NotFound, "NOT_FOUND"},
			{"", "a/b", workspacev1.EntryType_ENTRY_TYPE_FILE, codes.InvalidArgument, "INVALID_NAME"},
			{"", "..", workspacev1.EntryType_ENTRY_TYPE_FILE, codes.InvalidArgument, "INVALID_NAME"},
			{"", "", workspacev1.EntryType_ENTRY_TYPE_FILE, codes.InvalidArgument, "INVALID_NAME"},
			{"", ".git", workspacev1.EntryType_ENTRY_TYPE_DIRECTORY, codes.PermissionDenied, "DENYLISTED"},
			{"", "x", workspacev1.EntryType_ENTRY_TYPE_UNSPECIFIED, codes.InvalidArgument, "INVALID_ARGUMENT"},
		} {
			_, err := c.CreateEntry(ctx, &workspacev1.CreateEntryRequest{Workspace: ws, ParentPath: tc.parent, Name: tc.name, Type: tc.typ})
			t.Run(tc.reason+"_"+tc.name, func(t *testing.T) { wantErr(t, err, tc.code, tc.reason) })
		}
	})

	t.Run("UpdateFile", func(t *testing.T) {
		f := must[*workspacev1.GetFileResponse](t)(c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: ws, Path: "b.txt"}))
		e := must[*workspacev1.Entry](t)(c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: ws, Path: "b.txt", Content: "héllo\n",
			ExpectedRevision: f.GetEntry().GetRevision()}))
		if e.GetRevision() == f.GetEntry().GetRevision() || e.GetSize() != 7 {
			t.Errorf("updated entry %v", e)
		}
		if got := readFile(t, filepath.Join(root, "b.txt")); got != "héllo\n" {
			t.Errorf("content %q", got)
		}
		_, err := c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: ws, Path: "b.txt", Content: "lost update",
			ExpectedRevision: f.GetEntry().GetRevision()})
		wantErr(t, err, codes.Aborted, "REVISION_MISMATCH")
		if strings.Contains(err.Error(), "héllo") {
			t.Error("conflict message holds content")
		}
		_, err = c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: ws, Path: "b.txt", Content: strings.Repeat("y", 65),
			ExpectedRevision: e.GetRevision()})
		wantErr(t, err, codes.ResourceExhausted, "TOO_LARGE")
		_, err = c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: ws, Path: "b.txt", Content: "nul\x00",
			ExpectedRevision: e.GetRevision()})
		wantErr(t, err, codes.InvalidArgument, "NOT_TEXT")
		_, err = c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: ws, Path: "b.txt", Content: "x"})
		wantErr(t, err, codes.InvalidArgument, "INVALID_ARGUMENT")
		_, err = c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: ws, Path: "src", Content: "x", ExpectedRevision: "r"})
		wantErr(t, err, codes.FailedPrecondition, "NOT_A_FILE")
		if got := readFile(t, filepath.Join(root, "b.txt")); got != "héllo\n" {
			t.Errorf("content after refused updates %q", got)
		}
	})

	t.Run("MoveEntry", func(t *testing.T) {
		f := must[*workspacev1.GetFileResponse](t)(c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: ws, Path: "canary.txt"}))
		rev := f.GetEntry().GetRevision()
		_, err := c.MoveEntry(ctx, &workspacev1.MoveEntryRequest{Workspace: ws, SourcePath: "canary.txt", DestinationPath: "b.txt", ExpectedRevision: rev})
		wantErr(t, err, codes.AlreadyExists, "ALREADY_EXISTS")
		_, err = c.MoveEntry(ctx, &workspacev1.MoveEntryRequest{Workspace: ws, SourcePath: "canary.txt", DestinationPath: "src/c.txt", ExpectedRevision: "stale"})
		wantErr(t, err, codes.Aborted, "REVISION_MISMATCH")
		e := must[*workspacev1.Entry](t)(c.MoveEntry(ctx, &workspacev1.MoveEntryRequest{Workspace: ws, SourcePath: "canary.txt",
			DestinationPath: "src/c.txt", ExpectedRevision: rev}))
		if e.GetPath() != "src/c.txt" || readFile(t, filepath.Join(root, "src/c.txt")) != "canary" {
			t.Errorf("moved: %v", e)
		}
		if _, err := os.Lstat(filepath.Join(root, "canary.txt")); !os.IsNotExist(err) {
			t.Error("source still there")
		}
		st := must[*workspacev1.ListEntriesResponse](t)(c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: ws}))
		var srcRev string
		for _, e := range st.GetEntries() {
			if e.GetName() == "src" {
				srcRev = e.GetRevision()
			}
		}
		_, err = c.MoveEntry(ctx, &workspacev1.MoveEntryRequest{Workspace: ws, SourcePath: "src", DestinationPath: "src/util/src", ExpectedRevision: srcRev})
		wantErr(t, err, codes.FailedPrecondition, "MOVE_INTO_SELF")
		_, err = c.MoveEntry(ctx, &workspacev1.MoveEntryRequest{Workspace: ws, SourcePath: "src/c.txt", DestinationPath: "missing/c.txt", ExpectedRevision: e.GetRevision()})
		wantErr(t, err, codes.NotFound, "NOT_FOUND")
		_, err = c.MoveEntry(ctx, &workspacev1.MoveEntryRequest{Workspace: ws, SourcePath: "src/c.txt", DestinationPath: "node_modules/c.txt", ExpectedRevision: e.GetRevision()})
		wantErr(t, err, codes.PermissionDenied, "DENYLISTED")
	})

	t.Run("DeleteEntry", func(t *testing.T) {
		l := must[*workspacev1.ListEntriesResponse](t)(c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: ws}))
		revs := map[string]string{}
		for _, e := range l.GetEntries() {
			revs[e.GetName()] = e.GetRevision()
		}
		_, err := c.DeleteEntry(ctx, &workspacev1.DeleteEntryRequest{Workspace: ws, Path: "src", ExpectedRevision: revs["src"]})
		wantErr(t, err, codes.FailedPrecondition, "DIRECTORY_NOT_EMPTY")
		_, err = c.DeleteEntry(ctx, &workspacev1.DeleteEntryRequest{Workspace: ws, Path: "a.bin", ExpectedRevision: revs["b.txt"]})
		wantErr(t, err, codes.Aborted, "REVISION_MISMATCH")
		_, err = c.DeleteEntry(ctx, &workspacev1.DeleteEntryRequest{Workspace: ws, Path: "gone", ExpectedRevision: "x"})
		wantErr(t, err, codes.NotFound, "NOT_FOUND")
		_, err = c.DeleteEntry(ctx, &workspacev1.DeleteEntryRequest{Workspace: ws, Path: "link.txt", ExpectedRevision: "x"})
		wantErr(t, err, codes.PermissionDenied, "SYMLINK")
		must[*workspacev1.DeleteEntryResponse](t)(c.DeleteEntry(ctx, &workspacev1.DeleteEntryRequest{Workspace: ws, Path: "a.bin", ExpectedRevision: revs["a.bin"]}))
		must[*workspacev1.DeleteEntryResponse](t)(c.DeleteEntry(ctx, &workspacev1.DeleteEntryRequest{Workspace: ws, Path: "src", ExpectedRevision: revs["src"], Recursive: true}))
		for _, p := range []string{"a.bin", "src"} {
			if _, err := os.Lstat(filepath.Join(root, p)); !os.IsNotExist(err) {
				t.Errorf("%s not deleted", p)
			}
		}
	})
}

func TestGlobal(t *testing.T) {
	sc := sidecartest.Start(t, sidecartest.Options{})
	c := sc.Dial(t)
	ctx := ctxT(t)
	writeFile(t, sc.CodexHome, "auth.json", `{"token":"secret"}`)
	writeFile(t, sc.CodexHome, "config.toml", "x=1")
	writeFile(t, sc.CodexHome, "AGENTS.md", "# agents\n")
	writeFile(t, sc.CodexHome, "skills/review/SKILL.md", "review\n")

	l := must[*workspacev1.ListEntriesResponse](t)(c.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: global}))
	var names []string
	for _, e := range l.GetEntries() {
		names = append(names, e.GetName())
	}
	if strings.Join(names, ",") != "skills,AGENTS.md" {
		t.Errorf("global root lists %v, want skills and AGENTS.md only", names)
	}
	f := must[*workspacev1.GetFileResponse](t)(c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: global, Path: "AGENTS.md"}))
	e := must[*workspacev1.Entry](t)(c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: global, Path: "AGENTS.md", Content: "# new\n",
		ExpectedRevision: f.GetEntry().GetRevision()}))
	if readFile(t, filepath.Join(sc.CodexHome, "AGENTS.md")) != "# new\n" || e.GetPath() != "AGENTS.md" {
		t.Error("AGENTS.md not updated")
	}
	must[*workspacev1.Entry](t)(c.CreateEntry(ctx, &workspacev1.CreateEntryRequest{Workspace: global, ParentPath: "skills", Name: "new",
		Type: workspacev1.EntryType_ENTRY_TYPE_DIRECTORY}))
	for _, p := range []string{"auth.json", "config.toml", "sessions"} {
		_, err := c.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: global, Path: p})
		wantErr(t, err, codes.PermissionDenied, "OUTSIDE_GLOBAL")
	}
	_, err := c.CreateEntry(ctx, &workspacev1.CreateEntryRequest{Workspace: global, Name: "other.md", Type: workspacev1.EntryType_ENTRY_TYPE_FILE})
	wantErr(t, err, codes.PermissionDenied, "OUTSIDE_GLOBAL")
	var skillsRev string
	for _, e := range l.GetEntries() {
		if e.GetName() == "skills" {
			skillsRev = e.GetRevision()
		}
	}
	_, err = c.DeleteEntry(ctx, &workspacev1.DeleteEntryRequest{Workspace: global, Path: "skills", ExpectedRevision: skillsRev, Recursive: true})
	wantErr(t, err, codes.PermissionDenied, "PROTECTED")
	_, err = c.MoveEntry(ctx, &workspacev1.MoveEntryRequest{Workspace: global, SourcePath: "skills", DestinationPath: "skills2", ExpectedRevision: skillsRev})
	if err == nil {
		t.Error("moving the skills root succeeded")
	}
	if readFile(t, filepath.Join(sc.CodexHome, "auth.json")) != `{"token":"secret"}` {
		t.Error("auth.json changed")
	}
}

func TestRequestIDAndLogs(t *testing.T) {
	sc := sidecartest.Start(t, sidecartest.Options{})
	c := sc.Dial(t)
	ctx := metadata.AppendToOutgoingContext(ctxT(t), rpcmeta.RequestID, "req-abc-1", rpcmeta.Operator, "alice")
	must[*workspacev1.Project](t)(c.CreateProject(ctx, &workspacev1.CreateProjectRequest{Name: "demo"}))
	f := must[*workspacev1.Entry](t)(c.CreateEntry(ctx, &workspacev1.CreateEntryRequest{Workspace: proj("demo"), Name: "s.txt", Type: workspacev1.EntryType_ENTRY_TYPE_FILE}))
	var hdr metadata.MD
	must[*workspacev1.Entry](t)(c.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: proj("demo"), Path: "s.txt",
		Content: "CONTENT-MUST-NOT-BE-LOGGED", ExpectedRevision: f.GetRevision()}, grpc.Header(&hdr)))
	if got := hdr.Get(rpcmeta.RequestID); len(got) != 1 || got[0] != "req-abc-1" {
		t.Errorf("x-request-id header %v", got)
	}
	hdr = nil
	must[*workspacev1.ListProjectsResponse](t)(c.ListProjects(ctxT(t), &workspacev1.ListProjectsRequest{}, grpc.Header(&hdr)))
	if got := hdr.Get(rpcmeta.RequestID); len(got) != 1 || got[0] == "" {
		t.Errorf("generated x-request-id header %v", got)
	}
	sc.WaitLog(`"method":"/workspace.v1.WorkspaceService/ListProjects"`, 5*time.Second) // logged after UpdateFile
	found := false
	for _, l := range sc.LogLines() {
		if l["@message"] == "rpc" && l["method"] == "/workspace.v1.WorkspaceService/UpdateFile" {
			found = true
			for k, want := range map[string]any{"request_id": "req-abc-1", "operator": "alice", "code": "OK", "scope": "PROJECT",
				"project": "demo", "path": "s.txt"} {
				if l[k] != want {
					t.Errorf("log %s = %v, want %v", k, l[k], want)
				}
			}
		}
	}
	if !found {
		t.Error("no log line for UpdateFile")
	}
	if strings.Contains(sc.Logs(), "CONTENT-MUST-NOT-BE-LOGGED") {
		t.Error("file content in the logs")
	}
	if strings.Contains(sc.Logs(), sc.ProjectsDir) {
		t.Log("note: host path appears in logs (allowed in logs, never in client messages)")
	}
}
