// Package audit writes one structured record per mutation (PRD §12.1) to the
// gateway log and, when configured, to a JSON-lines file.
//
// Guarantees: a record holds only the fields of Record; paths in the GLOBAL
// scope outside skills/ and AGENTS.md are replaced by "[redacted]" (so no
// other CODEX_HOME name is ever written); there is no field for content,
// endpoints or credentials. Writes to the file are serialised by a mutex and
// use O_APPEND, one line per record, without fsync (a crash may lose the last
// records). Limits: the file is never rotated by the gateway.
package audit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"

	"github.com/agentworkspace/files/contracts/errtable"
	"github.com/agentworkspace/files/internal/davwire"
)

// Redacted replaces GLOBAL paths outside the allowlist (davwire.RedactGlobal).
const Redacted = davwire.Redacted

// Results.
const (
	ResultOK    = "ok"
	ResultError = "error"
)

// Record is one audited mutation. Field names are part of the interface.
type Record struct {
	Time            time.Time `json:"time"`
	RequestID       string    `json:"request_id"`
	Operator        string    `json:"operator"`
	AgentID         string    `json:"agent_id"`
	WorkspaceScope  string    `json:"workspace_scope"`
	ProjectName     string    `json:"project_name"`
	Action          string    `json:"action"`
	SourcePath      string    `json:"source_path"`
	DestinationPath string    `json:"destination_path"`
	// CheckpointID names the checkpoint a checkpoint action created,
	// restored or deleted, or the per-file version a WebDAV write kept of
	// what it replaced (webdav.unconditionalWrites: keep).
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// Unconditional: a WebDAV write that went ahead without a
	// precondition or lock because what it replaced was kept.
	Unconditional bool `json:"unconditional,omitempty"`
	// Automatic and CheckpointReason mark the create_checkpoint record of
	// a checkpoint the sidecar took on its own before a mutation, and why:
	// before_delete, before_project_delete or before_restore. The
	// mutation's own record follows, naming it in AutoCheckpointID.
	Automatic        bool   `json:"automatic,omitempty"`
	CheckpointReason string `json:"checkpoint_reason,omitempty"`
	// AutoCheckpointID names the automatic checkpoint taken before this
	// delete or restore (restoring it undoes the mutation).
	AutoCheckpointID string `json:"auto_checkpoint_id,omitempty"`
	// SkipCheckpoint: the caller asked the delete to go without its
	// automatic checkpoint (the override for a full store), so it cannot
	// be undone.
	SkipCheckpoint bool   `json:"skip_checkpoint,omitempty"`
	Result         string `json:"result"`
	GRPCCode       string `json:"grpc_code"`
	// Reason is the machine-readable error reason, when there is one.
	Reason string `json:"reason,omitempty"`
	// HTTPStatus is set for WebDAV mutations.
	HTTPStatus int `json:"http_status,omitempty"`
	// DurationMS is the handling time in milliseconds.
	DurationMS float64 `json:"duration_ms"`
}

// Logger writes audit records. Safe for concurrent use.
type Logger struct {
	log  hclog.Logger
	now  func() time.Time
	mu   sync.Mutex
	path string
	file *os.File
	fi   os.FileInfo // of file, to notice it was rotated away
	// closed is set by Close: later records go to the log only.
	closed bool
}

// Open returns a Logger writing to log and, when path is not empty, appending
// to path (created 0600).
//
// The file may be rotated by renaming or deleting it (logrotate's default
// mode, no signal needed): before each record the Logger checks that path
// still names the file it has open, and otherwise opens path anew.
func Open(log hclog.Logger, path string, now func() time.Time) (*Logger, error) {
	log = cmp.Or(log, hclog.NewNullLogger())
	if now == nil {
		now = time.Now
	}
	l := &Logger{log: log.Named("audit"), now: now, path: path}
	if path != "" {
		if err := l.open(); err != nil {
			return nil, fmt.Errorf("audit.file: %w", err)
		}
	}
	return l, nil
}

// open opens l.path for appending, replacing the open file; l.mu is held
// (or l is not shared yet).
func (l *Logger) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("not a regular file")
	}
	if err != nil {
		f.Close()
		return err
	}
	if l.file != nil {
		l.file.Close()
	}
	l.file, l.fi = f, fi
	return nil
}

// current makes sure l.file is the file at l.path, reopening it after a
// rotation; l.mu is held.
func (l *Logger) current() error {
	if l.file != nil {
		if fi, err := os.Stat(l.path); err == nil && os.SameFile(fi, l.fi) {
			return nil
		}
	}
	return l.open()
}

// Close closes the audit file.
func (l *Logger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.file == nil {
		return nil
	}
	err := l.file.Close()
	l.file = nil
	return err
}

// Tracker tells a request's outer layers whether an inner layer already
// wrote a record for it (see Track).
type Tracker struct{ recorded atomic.Bool }

// Recorded reports whether Record was called with a context carrying t.
func (t *Tracker) Recorded() bool { return t.recorded.Load() }

type trackerKey struct{}

// Track returns a context whose Record calls are noted in the Tracker, so an
// HTTP layer can audit mutations refused before they reached the service.
func Track(ctx context.Context) (context.Context, *Tracker) {
	t := &Tracker{}
	return context.WithValue(ctx, trackerKey{}, t), t
}

// AutomaticCheckpoint is the create_checkpoint record of the automatic
// checkpoint id (why: reason) that the sidecar took of path before the
// mutation m: same time, request, operator and workspace as m, and a
// success whatever m's result (the checkpoint came first). REST and WebDAV
// write it before m's own record, which names id in AutoCheckpointID.
func AutomaticCheckpoint(m Record, id, reason, path string) Record {
	return Record{Time: m.Time, RequestID: m.RequestID, Operator: m.Operator, AgentID: m.AgentID,
		WorkspaceScope: m.WorkspaceScope, ProjectName: m.ProjectName, Action: "create_checkpoint", SourcePath: path,
		CheckpointID: id, Automatic: true, CheckpointReason: reason,
		Result: ResultOK, GRPCCode: "OK", DurationMS: m.DurationMS}
}

// Record writes one record. Paths are redacted here, so callers cannot leak a
// CODEX_HOME name by forgetting to.
func (l *Logger) Record(ctx context.Context, r Record) {
	if t, ok := ctx.Value(trackerKey{}).(*Tracker); ok {
		t.recorded.Store(true)
	}
	if r.Time.IsZero() {
		r.Time = l.now()
	}
	r.Time = r.Time.UTC()
	if r.WorkspaceScope == "GLOBAL" {
		r.SourcePath = davwire.RedactGlobal(r.SourcePath)
		r.DestinationPath = davwire.RedactGlobal(r.DestinationPath)
	}
	if r.Result == "" {
		r.Result = ResultOK
		if r.GRPCCode != "" && r.GRPCCode != "OK" {
			r.Result = ResultError
		}
	}
	l.log.Info("audit",
		"request_id", r.RequestID, "operator", r.Operator, "agent_id", r.AgentID,
		"workspace_scope", r.WorkspaceScope, "project_name", r.ProjectName,
		"action", r.Action, "source_path", r.SourcePath, "destination_path", r.DestinationPath,
		"checkpoint_id", r.CheckpointID, "automatic", r.Automatic, "checkpoint_reason", r.CheckpointReason,
		"auto_checkpoint_id", r.AutoCheckpointID, "skip_checkpoint", r.SkipCheckpoint,
		"result", r.Result, "grpc_code", r.GRPCCode, "reason", r.Reason,
		"http_status", r.HTTPStatus, "duration_ms", r.DurationMS)
	if l.path == "" {
		return
	}
	line, err := json.Marshal(r)
	if err != nil {
		return
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	if err := l.current(); err != nil {
		l.log.Error("audit file could not be reopened; record only in the log", "request_id", r.RequestID, "error", causeOnly(err))
		return
	}
	if _, err := l.file.Write(line); err != nil {
		l.log.Error("audit file write failed", "request_id", r.RequestID, "error", causeOnly(err))
	}
}

// causeOnly is err without the file's path (a *PathError's Op and Path).
func causeOnly(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Duration converts a duration to the record's milliseconds.
func Duration(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

// CodeForHTTPStatus names a gRPC code for an HTTP status, for records made
// at the HTTP layer where no reason is known (REST requests refused before
// they reached the service). It holds no table of its own: the code is the
// one whose default errtable row has that REST status, else the code of the
// first reason (in name order) whose row has it. Callers that know the
// reason should use errtable.For(reason).Code instead; the WebDAV view
// does.
func CodeForHTTPStatus(status int) string {
	if status < 400 {
		return codes.OK.String()
	}
	for _, c := range []codes.Code{codes.InvalidArgument, codes.Unauthenticated, codes.PermissionDenied, codes.NotFound,
		codes.Aborted, codes.ResourceExhausted, codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Internal} {
		if errtable.RESTStatus(c, "") == status {
			return c.String()
		}
	}
	for _, r := range errtable.Reasons() {
		if row := errtable.For(r); row.REST == status || row.WebDAV == status {
			return row.Code.String()
		}
	}
	if status < 500 {
		return codes.InvalidArgument.String()
	}
	return codes.Internal.String()
}
