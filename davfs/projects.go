package davfs

import (
	"context"
	"errors"
	"path/filepath"
	"slices"

	"github.com/agentworkspace/files/davfs/internal/fdio"
	"golang.org/x/sys/unix"
)

// projectAt builds the Project named name in the projects root dirfd;
// errors for anything that is not a real directory on the root's device.
func (f *FS) projectAt(dirfd int, name string) (Project, error) {
	fd, err := f.openName(f.projects, dirfd, name, fdio.DirPath)
	if err != nil {
		return Project{}, fsErr(classifyAt(dirfd, name, err), name)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := fstatOn(f.projects, fd, &st); err != nil {
		return Project{}, fsErr(err, name)
	}
	if !fdio.IsType(&st, unix.S_IFDIR) {
		return Project{}, errSymlink(name)
	}
	p := Project{Name: name, ModTime: modTime(&st), Revision: dirRevision(&st)}
	var g unix.Stat_t
	p.GitInitialized = fdio.Fstatat(fd, ".git", &g) == nil && fdio.IsType(&g, unix.S_IFDIR)
	return p, nil
}

// ListProjects lists first-level, non-denylisted, non-symlink directories of
// the projects root in byte-wise name order. pageSize 0 means the default;
// above Config.MaxPageSize is ResourceExhausted/PAGE_SIZE_TOO_LARGE. The
// cursor holds the last name: the next page continues after it even if
// projects were added or removed meanwhile. GitInitialized means <name>/.git
// is a real directory (the repository is not inspected).
func (f *FS) ListProjects(ctx context.Context, pageSize int, cursor string) (ProjectPage, error) {
	if err := f.alive(); err != nil {
		return ProjectPage{}, err
	}
	n, err := f.pageSize(pageSize)
	if err != nil {
		return ProjectPage{}, err
	}
	after := ""
	if cursor != "" {
		c, err := decodeCursor(cursor)
		if err != nil {
			return ProjectPage{}, err
		}
		if c.Scope != ScopeUnspecified || c.Dir != "" || c.Proj != "" {
			return ProjectPage{}, errCursorStale()
		}
		after = c.Name
	}
	fd, err := unix.Openat(f.projects.fd, ".", fdio.DirRead|fdio.Common, 0)
	if err != nil {
		return ProjectPage{}, fsErr(err, "")
	}
	defer unix.Close(fd)
	ents, err := fdio.ReadDirents(fd)
	if err != nil {
		return ProjectPage{}, fsErr(err, "")
	}
	names := make([]string, 0, len(ents))
	for _, d := range ents {
		if !f.visibleName(d.Name) || (d.Type != unix.DT_DIR && d.Type != unix.DT_UNKNOWN) {
			continue
		}
		if after != "" && NaturalCompare(d.Name, after) <= 0 {
			continue
		}
		names = append(names, d.Name)
	}
	slices.SortFunc(names, NaturalCompare)
	var page ProjectPage
	i := 0
	for ; i < len(names) && len(page.Projects) < n; i++ {
		if ctx.Err() != nil {
			return ProjectPage{}, ctxErr(ctx)
		}
		p, err := f.projectAt(fd, names[i])
		if err != nil {
			continue // vanished, a symlink, a file (DT_UNKNOWN) or a mount
		}
		page.Projects = append(page.Projects, p)
	}
	if i < len(names) && len(page.Projects) > 0 {
		page.NextCursor = encodeCursor(cursorData{Name: page.Projects[len(page.Projects)-1].Name})
	}
	return page, nil
}

// CreateProject makes one directory (0755, one mkdirat: AlreadyExists for
// any existing name, left untouched) and runs the initializer; on failure
// it removes exactly what it created and returns Internal/GIT_INIT_FAILED.
// The name must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$ and not be
// denylisted.
func (f *FS) CreateProject(ctx context.Context, name string) (Project, error) {
	if err := f.alive(); err != nil {
		return Project{}, err
	}
	if err := f.checkProjectName(name); err != nil {
		return Project{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := unix.Mkdirat(f.projects.fd, name, 0o755); err != nil {
		return Project{}, fsErr(err, name)
	}
	fd, err := unix.Openat(f.projects.fd, name, fdio.DirRead|fdio.Common, 0)
	if err != nil {
		return Project{}, fsErr(err, name)
	}
	var st unix.Stat_t
	err = unix.Fchmod(fd, 0o755)
	if err == nil {
		err = unix.Fstat(fd, &st)
	}
	unix.Close(fd)
	if err != nil {
		f.rollbackProject(ctx, name, st)
		return Project{}, fsErr(err, name)
	}
	if f.cfg.Initializer != nil {
		if err := f.cfg.Initializer(ctx, filepath.Join(f.cfg.ProjectsRoot, name)); err != nil {
			f.log.Warn("project initializer failed; removing the new directory", "project", name, "error", err)
			f.rollbackProject(ctx, name, st)
			return Project{}, newErr(CodeInternal, ReasonGitInitFailed, err, "initializing project %q failed; nothing was kept", name)
		}
		// git has no fd interface, so the initializer works on a path. The
		// agent (same UID) could swap the directory meanwhile; that gains it
		// nothing it could not do itself, but the project must still be the
		// directory this call made.
		var now unix.Stat_t
		if err := unix.Fstatat(f.projects.fd, name, &now, unix.AT_SYMLINK_NOFOLLOW); err != nil ||
			now.Ino != st.Ino || now.Dev != st.Dev || now.Mode&unix.S_IFMT != unix.S_IFDIR {
			f.log.Warn("project directory replaced during initialization", "project", name)
			return Project{}, newErr(CodeInternal, ReasonGitInitFailed, err, "project %q was replaced while it was being initialized", name)
		}
	}
	if err := f.syncRoot(); err != nil {
		return Project{}, fsErr(err, name)
	}
	return f.projectAt(f.projects.fd, name)
}

// rollbackProject removes the directory CreateProject made, only if it is
// still that inode.
func (f *FS) rollbackProject(ctx context.Context, name string, st unix.Stat_t) {
	if st.Ino == 0 {
		unix.Unlinkat(f.projects.fd, name, unix.AT_REMOVEDIR)
		return
	}
	if err := removeDir(context.WithoutCancel(ctx), f.projects.fd, name, f.projects, st.Ino); err != nil {
		f.log.Error("could not remove a half-created project", "project", name, "error", err)
	}
}

func (f *FS) syncRoot() error {
	fd, err := unix.Openat(f.projects.fd, ".", fdio.DirRead|fdio.Common, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return fdio.FsyncDir(fd)
}

// DeleteProject permanently and recursively deletes a project. confirmName
// must equal name (InvalidArgument/CONFIRMATION_MISMATCH, nothing deleted).
// Right before deleting, under the mutation lock, it re-checks that name is
// still a real directory directly under the projects root (not a symlink:
// PermissionDenied/SYMLINK; missing: NotFound/PROJECT_NOT_FOUND) and
// deletes exactly that inode: everything in it, .git and denylisted
// directories included, never following a symlink. The automatic
// checkpoint before it is the checkpoint store's (davfs/checkpoint), which
// calls CheckProjectDelete, checkpoints, then calls this.
func (f *FS) DeleteProject(ctx context.Context, name, confirmName string) error {
	if err := f.CheckProjectDelete(name, confirmName); err != nil {
		return err
	}
	return f.deleteProject(ctx, name)
}

// CheckProjectDelete is what DeleteProject refuses before anything else:
// a closed FS, a confirmation that differs, a denied or invalid name.
func (f *FS) CheckProjectDelete(name, confirmName string) error {
	if err := f.alive(); err != nil {
		return err
	}
	if name != confirmName {
		return newErr(CodeInvalidArgument, ReasonConfirmationMismatch, nil, "confirm_name must equal the project name")
	}
	if f.denied(name) {
		return newErr(CodePermissionDenied, ReasonDenylisted, nil, "project %q is denied", name)
	}
	if !f.visibleName(name) { // a single segment: no "/"
		return newErr(CodeInvalidArgument, ReasonInvalidName, nil, "invalid project name %q", name)
	}
	return nil
}

func (f *FS) deleteProject(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.projectErr(name); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := lstatOn(f.projects, f.projects.fd, name, &st); err != nil {
		return fsErr(err, name)
	}
	if err := removeDir(context.WithoutCancel(ctx), f.projects.fd, name, f.projects, st.Ino); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return newErr(CodeNotFound, ReasonProjectNotFound, err, "project %q not found", name)
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return newErr(CodePermissionDenied, ReasonSymlink, err, "project %q is not a real directory", name)
		}
		return removeErr(err, name)
	}
	if err := f.syncRoot(); err != nil {
		return fsErr(err, name)
	}
	return nil
}
