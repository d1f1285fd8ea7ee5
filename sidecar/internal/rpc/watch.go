package rpc

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/watch"
)

// maxWatchDirectories bounds a WatchRequest before davfs sees it; the
// per-stream watch cap (watch.Config.MaxDirsPerSubscriber) is lower
// and answered with a RESYNC(LIMIT) event, not an error.
const maxWatchDirectories = 4096

// WatchService is the sidecar's WatchService over a watch.Watcher.
type WatchService struct {
	workspacev1.UnimplementedWatchServiceServer
	watcher func() (*watch.Watcher, error)
}

// NewWatchService returns the service over the watcher that watcher
// returns, or, while there is none (it could not start: the error says
// why, WATCH_UNAVAILABLE), a service whose streams fail with that error.
func NewWatchService(watcher func() (*watch.Watcher, error)) *WatchService {
	return &WatchService{watcher: watcher}
}

// Watch streams w's changes for the request's directories until the client
// cancels or the watcher closes (the sidecar is stopping: Unavailable).
func (s *WatchService) Watch(req *workspacev1.WatchRequest, stream workspacev1.WatchService_WatchServer) error {
	ws, err := workspace(req.GetWorkspace())
	if err != nil {
		return streamErr(err)
	}
	if len(req.GetDirectories()) > maxWatchDirectories {
		return streamErr(invalid(davfs.ReasonInvalidArgument, "too many directories in one watch request"))
	}
	w, err := s.watcher()
	if err != nil {
		return streamErr(err)
	}
	ctx := stream.Context()
	sub, err := w.Subscribe(ctx, ws, req.GetDirectories(), req.GetResumeAfter())
	if err != nil {
		return streamErr(err)
	}
	defer sub.Close()
	for {
		c, err := sub.Next(ctx)
		if errors.Is(err, watch.ErrClosed) {
			return status.Error(codes.Unavailable, "the sidecar is stopping; reconnect and resume")
		}
		if err != nil {
			return streamErr(err)
		}
		if err := stream.Send(toWatchEvent(c)); err != nil {
			return err
		}
	}
}

func streamErr(err error) error {
	if errors.Is(err, context.Canceled) {
		return status.Error(codes.Canceled, "watch canceled")
	}
	st, _ := toStatus(err)
	return st.Err()
}

func toWatchEvent(c watch.Change) *workspacev1.WatchEvent {
	ev := &workspacev1.WatchEvent{
		Id:          c.ID,
		Directory:   c.Directory,
		Path:        c.Path,
		FromPath:    c.FromPath,
		Directories: c.Directories,
		Workspace:   toWorkspaceRef(c.Workspace),
		Kind:        watchKinds[c.Kind],
		Reason:      resyncReasons[c.Reason],
	}
	switch c.Kind {
	case watch.ChangeCreated, watch.ChangeModified, watch.ChangeRenamed, watch.ChangeDirectory:
		ev.Entry = toEntry(c.Entry)
	}
	return ev
}

// The contract's names of davfs's change kinds and resync reasons (the zero
// value, UNSPECIFIED, for any other).
var (
	watchKinds = map[watch.ChangeKind]workspacev1.WatchEventKind{
		watch.ChangeReady:     workspacev1.WatchEventKind_WATCH_EVENT_KIND_READY,
		watch.ChangeCreated:   workspacev1.WatchEventKind_WATCH_EVENT_KIND_CREATED,
		watch.ChangeModified:  workspacev1.WatchEventKind_WATCH_EVENT_KIND_MODIFIED,
		watch.ChangeRemoved:   workspacev1.WatchEventKind_WATCH_EVENT_KIND_REMOVED,
		watch.ChangeRenamed:   workspacev1.WatchEventKind_WATCH_EVENT_KIND_RENAMED,
		watch.ChangeDirectory: workspacev1.WatchEventKind_WATCH_EVENT_KIND_DIRECTORY,
		watch.ChangeResync:    workspacev1.WatchEventKind_WATCH_EVENT_KIND_RESYNC,
	}
	resyncReasons = map[watch.ResyncReason]workspacev1.ResyncReason{
		watch.ResyncOverflow: workspacev1.ResyncReason_RESYNC_REASON_OVERFLOW,
		watch.ResyncLimit:    workspacev1.ResyncReason_RESYNC_REASON_LIMIT,
		watch.ResyncGap:      workspacev1.ResyncReason_RESYNC_REASON_GAP,
		watch.ResyncGone:     workspacev1.ResyncReason_RESYNC_REASON_GONE,
	}
)

func toWorkspaceRef(ws davfs.Workspace) *workspacev1.WorkspaceRef {
	switch ws.Scope {
	case davfs.ScopeProject:
		return &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: ws.Project}
	case davfs.ScopeGlobal:
		return &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_GLOBAL}
	}
	return nil
}
