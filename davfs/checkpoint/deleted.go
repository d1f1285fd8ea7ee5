package checkpoint

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/agentworkspace/files/davfs"
	"golang.org/x/sys/unix"
)

// Recently deleted: the projects whose automatic checkpoint of a project
// delete (CheckpointBeforeProjectDelete) is kept and that no project of
// their name has replaced, found without knowing their names.

// DeletedProject is one deleted project and its newest before-delete
// checkpoint.
type DeletedProject struct {
	Name       string
	Checkpoint Checkpoint
}

// ListDeletedProjects lists the deleted projects, newest deletion first.
// A project that exists now is not listed.
func (f *Store) ListDeletedProjects(ctx context.Context) ([]DeletedProject, error) {
	if err := f.fs.Alive(); err != nil {
		return nil, err
	}
	if f.ck == nil {
		return nil, errCheckpointsDisabled()
	}
	if err := f.ck.open(f); err != nil {
		return nil, err
	}
	f.ck.gc.RLock()
	newest, err := f.ck.projectDeletes()
	f.ck.gc.RUnlock()
	if err != nil {
		return nil, err
	}
	out := make([]DeletedProject, 0, len(newest))
	for name, c := range newest {
		if davfs.ReasonOf(f.fs.ProjectErr(name)) == davfs.ReasonProjectNotFound {
			out = append(out, DeletedProject{Name: name, Checkpoint: c})
		}
	}
	slices.SortFunc(out, func(a, b DeletedProject) int { return strings.Compare(b.Checkpoint.ID, a.Checkpoint.ID) })
	return out, nil
}

// projectDeletes returns, per project name, the newest whole-project
// checkpoint taken before its delete. Descriptions that cannot be read
// are left out (as in list).
func (s *ckStore) projectDeletes() (map[string]Checkpoint, error) {
	newest := map[string]Checkpoint{}
	err := eachDir(s.wsfd, func(name string, dfd int, err error) {
		if err != nil || !strings.HasPrefix(name, "p-") {
			return
		}
		metas, _ := metasIn(dfd)
		for _, m := range metas {
			c := m.checkpoint()
			if c.Reason != CheckpointBeforeProjectDelete || c.Root != "" || c.Workspace.Scope != davfs.ScopeProject ||
				ckWorkspaceKey(c.Workspace) != name {
				continue
			}
			if old, ok := newest[c.Workspace.Project]; !ok || c.ID > old.ID {
				newest[c.Workspace.Project] = c
			}
		}
	})
	if errors.Is(err, unix.ENOENT) {
		return newest, nil
	}
	if err != nil {
		return nil, errStore(err)
	}
	return newest, nil
}

// RestoreDeletedProject brings the deleted project name back from its
// checkpoint id (""): the newest taken before its delete), as the project
// as ("": name). The project restored must not exist: AlreadyExists
// (checked under the mutation lock), nothing changed. It needs no plan
// token: it only creates.
func (f *Store) RestoreDeletedProject(ctx context.Context, name, id, as, operator string) (RestoreResult, error) {
	ws := davfs.Workspace{Scope: davfs.ScopeProject, Project: name}
	if as == "" {
		as = name
	}
	if err := f.fs.CheckProjectName(as); err != nil {
		return RestoreResult{}, err
	}
	if id == "" {
		if _, err := f.checkpointCall(ws, ""); err != nil {
			return RestoreResult{}, err
		}
		f.ck.gc.RLock()
		newest, err := f.ck.projectDeletes()
		f.ck.gc.RUnlock()
		if err != nil {
			return RestoreResult{}, err
		}
		c, ok := newest[name]
		if !ok {
			return RestoreResult{}, newErr(davfs.CodeNotFound, davfs.ReasonCheckpointNotFound, nil, "no deleted project %q has a checkpoint", name)
		}
		id = c.ID
	}
	c, err := f.GetCheckpoint(ctx, ws, id)
	if err != nil {
		return RestoreResult{}, err
	}
	if c.Reason != CheckpointBeforeProjectDelete || c.Root != "" {
		return RestoreResult{}, newErr(davfs.CodeInvalidArgument, davfs.ReasonInvalidArgument, nil, "checkpoint %s was not taken before a project delete", id)
	}
	return f.RestoreCheckpoint(ctx, ws, id, "", RestoreOptions{Operator: operator, AsNew: as})
}
