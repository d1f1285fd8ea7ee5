package checkpoint

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentworkspace/files/davfs"
	"github.com/hashicorp/go-hclog"
)

// Package checkpoint is the checkpoint store beside the confined core:
// capture (scan.go), the store (store.go, pack.go, manifest*.go),
// compare, restore and per-file versions, and the automatic checkpoint
// composed before a recursive delete (delete.go). It reaches the volumes
// only through davfs's exported API (davfs/target.go) and the fd calls
// of davfs/internal/fdio; davfs knows nothing of it.
//
// A checkpoint is a snapshot of a PROJECT or GLOBAL workspace (or of one
// directory or file in it) that can be compared with the current state or
// with another checkpoint, restored (the whole of it, a directory or one
// file) and deleted. See docs/checkpoints.md for the design.
//
// What a checkpoint guarantees: each file in it is whole, as of one moment
// (read from one fd and kept only if its size, mtime and ctime did not move
// while it was read; a file still changing after a few attempts is left
// out and counted in Skipped). The tree as a whole is best effort while the
// agent writes: files are read one after the other, so two files may be
// captured at different moments. With the agent idle it is exact.
//
// Confinement: a checkpoint is read through the same confined walk as every
// other operation (fds, never following a symlink, never crossing a mount).
// It never captures a symlink, a FIFO, socket or device, a file with more
// than one hard link, a denylisted or invalid name, davfs's temp files, or
// anything of CODEX_HOME outside skills/ and AGENTS.md. A restore writes
// only through davfs's atomic writes under the mutation lock, re-validates
// every path from the store like a request path, never creates a symlink
// or hard link, and refuses (FailedPrecondition/CHECKPOINT_CONFLICT) before
// changing anything when something it would have to write over or into is
// one of those uncaptured things.
//
// Limit: the store lives on the agent's volume (the agent can read and
// delete it like anything else there). Objects are opened without following
// a symlink, must be single-link regular files and are verified against
// their SHA-256 name before a restore writes them; a manifest is
// validated whole when loaded (checkManifest), before anything uses it; so
// tampering can lose checkpoints but not make a restore read or write
// anything outside the workspace, panic, or stop half done. A store that
// cannot be opened (a symlink, a foreign folder, a linked subfolder) turns
// checkpoints off with CHECKPOINTS_UNAVAILABLE, never the files
// (open.go).

// Config is services.checkpoints.
type Config struct {
	// Dir is the store's absolute host path. Empty disables checkpoints
	// (every checkpoint call fails with FailedPrecondition/
	// CHECKPOINTS_DISABLED). It must lie outside every project and outside
	// CODEX_HOME; a direct child of the projects root is allowed and its
	// name is then denied (never a Project, never listed).
	Dir string
	// MaxPerWorkspace bounds the checkpoints of one workspace; the oldest
	// are pruned first. Default 20.
	MaxPerWorkspace int
	// MaxTotalBytes bounds the bytes of all stored objects. Default 10 GiB.
	MaxTotalBytes int64
	// MaxAge: older checkpoints are pruned. Default 30 days.
	MaxAge time.Duration
	// MaxEntries bounds the names one capture records (directories and
	// files kept, plus names skipped): beyond it the capture fails with
	// ResourceExhausted/CHECKPOINT_LIMIT and nothing of it is kept.
	// Default 200,000.
	MaxEntries int
	// Automatic takes a checkpoint before every restore, every project
	// delete and every recursive delete of a directory.
	Automatic bool
	// MaxVersionsPerWorkspace bounds the per-file versions of one
	// workspace (version.go), which do not count against
	// MaxPerWorkspace; the oldest are pruned first. Default 200.
	MaxVersionsPerWorkspace int
}

// Checkpoint defaults.
const (
	DefaultCheckpointsPerWorkspace = 20
	DefaultCheckpointBytes         = 10 << 30
	DefaultCheckpointAge           = 30 * 24 * time.Hour
	DefaultCheckpointEntries       = 200000
	maxLabelBytes                  = 200
	maxOperatorBytes               = 256
)

// Why a checkpoint was taken.
const (
	CheckpointManual              = ""
	CheckpointBeforeRestore       = "before_restore"
	CheckpointBeforeProjectDelete = "before_project_delete"
	CheckpointBeforeDelete        = "before_delete"
)

// Checkpoint describes one stored checkpoint.
type Checkpoint struct {
	ID        string
	Workspace davfs.Workspace
	// Root is the path the checkpoint was taken of ("" for the whole
	// workspace). Compare and restore stay inside it.
	Root     string
	Label    string
	Operator string
	Created  time.Time
	// Reason is CheckpointManual or one of the automatic reasons.
	Reason string
	Files  int
	Dirs   int
	Size   int64 // bytes of the files captured
	// Skipped counts names left out: links, FIFOs, devices, denylisted or
	// invalid names, mount points, files still changing after retries.
	Skipped int
}

// CheckpointOptions are the choices of CreateCheckpoint.
type CheckpointOptions struct {
	Label    string
	Operator string
	// Path limits the checkpoint to one directory or file ("": all).
	Path string
}

var checkpointIDRE = regexp.MustCompile(`^[0-9a-f]{24}$`)

// newCheckpointID is 16 hex digits of the creation time in nanoseconds and
// 8 random ones: IDs sort by creation time.
func newCheckpointID(now time.Time) string {
	var r [4]byte
	_, _ = rand.Read(r[:])
	return hex.EncodeToString(append(binary.BigEndian.AppendUint64(nil, uint64(now.UnixNano())), r[:]...))
}

func errCheckpointNotFound(id string) *davfs.Error {
	if len(id) > 64 {
		id = id[:64]
	}
	return newErr(davfs.CodeNotFound, davfs.ReasonCheckpointNotFound, nil, "checkpoint %q not found", id)
}

func checkLabel(label string) error {
	if len(label) > maxLabelBytes {
		return newErr(davfs.CodeInvalidArgument, davfs.ReasonInvalidArgument, nil, "label is longer than %d bytes", maxLabelBytes)
	}
	if !utf8.ValidString(label) || strings.IndexFunc(label, unicode.IsControl) >= 0 {
		return newErr(davfs.CodeInvalidArgument, davfs.ReasonInvalidArgument, nil, "label must be UTF-8 text without control characters")
	}
	return nil
}

// checkpointWorkspace validates ws for a checkpoint call. A PROJECT
// workspace needs only a valid name: its project may have been deleted
// (its checkpoints are how it comes back).
func (f *Store) checkpointWorkspace(ws davfs.Workspace) error {
	if err := f.fs.Alive(); err != nil {
		return err
	}
	if f.ck == nil {
		return errCheckpointsDisabled()
	}
	switch ws.Scope {
	case davfs.ScopeProject:
		return f.fs.CheckProjectName(ws.Project)
	case davfs.ScopeGlobal:
		if ws.Project != "" {
			return newErr(davfs.CodeInvalidArgument, davfs.ReasonInvalidWorkspace, nil, "a GLOBAL workspace takes no project_name")
		}
		return nil
	}
	return newErr(davfs.CodeInvalidArgument, davfs.ReasonInvalidWorkspace, nil, "workspace scope must be PROJECT or GLOBAL")
}

// CheckpointsEnabled reports whether a store is configured.
func (f *Store) CheckpointsEnabled() bool { return f.ck != nil }

// CreateCheckpoint snapshots ws (or opts.Path in it) into the store. It
// takes no mutation lock: the agent and other requests go on writing (see
// the guarantees above). Afterwards the limits are applied, automatic
// checkpoints before manual ones, oldest first; if the new checkpoint
// cannot fit even with every removal planned, nothing else is removed, it
// is removed again and the call fails with ResourceExhausted/CHECKPOINT_LIMIT.
func (f *Store) CreateCheckpoint(ctx context.Context, ws davfs.Workspace, opts CheckpointOptions) (Checkpoint, error) {
	if err := f.checkpointWorkspace(ws); err != nil {
		return Checkpoint{}, err
	}
	if err := checkLabel(opts.Label); err != nil {
		return Checkpoint{}, err
	}
	return f.createCheckpoint(ctx, ws, opts, CheckpointManual)
}

func (f *Store) createCheckpoint(ctx context.Context, ws davfs.Workspace, opts CheckpointOptions, reason string) (Checkpoint, error) {
	w, err := f.fs.Resolve(ws, opts.Path)
	if err != nil {
		return Checkpoint{}, err
	}
	if len(opts.Operator) > maxOperatorBytes {
		opts.Operator = opts.Operator[:maxOperatorBytes]
	}
	if !w.IsRoot() {
		// The target's own problem, as every operation reports it (a
		// symlink is SYMLINK, a FIFO NOT_REGULAR, a missing one NOT_FOUND).
		if _, err := f.fs.StatTarget(w); err != nil {
			return Checkpoint{}, err
		}
	}
	if err := f.ck.open(f); err != nil {
		return Checkpoint{}, err
	}
	start := f.now()
	c, err := f.ck.create(ctx, f, w, opts, reason, start)
	f.observeCheckpoint("create", f.now().Sub(start), c.Size, err)
	return c, err
}

// autoCheckpoint takes the automatic checkpoint of path in ws (reason, by
// operator) when they are enabled. A missing target needs none. kept, when
// set, is a per-file version just kept of path (KeepVersion): that is the
// automatic checkpoint.
func (f *Store) autoCheckpoint(ctx context.Context, ws davfs.Workspace, path, reason, operator, kept string) (string, error) {
	if f.ck == nil || !f.ck.cfg.Automatic {
		return "", nil
	}
	if kept != "" {
		return kept, nil // a per-file version of it was just kept
	}
	c, err := f.createCheckpoint(ctx, ws, CheckpointOptions{Path: path, Operator: operator}, reason)
	if err != nil {
		if r := davfs.ReasonOf(err); davfs.CodeOf(err) == davfs.CodeNotFound || r == davfs.ReasonNotRegular || r == davfs.ReasonSymlink || r == davfs.ReasonMultipleLinks {
			return "", nil // nothing there a checkpoint could hold
		}
		return "", err
	}
	return c.ID, nil
}

// ListCheckpoints lists ws's checkpoints, newest first. The project of a
// PROJECT workspace need not exist any more.
func (f *Store) ListCheckpoints(ctx context.Context, ws davfs.Workspace) ([]Checkpoint, error) {
	if _, err := f.checkpointCall(ws, ""); err != nil {
		return nil, err
	}
	f.ck.gc.RLock()
	defer f.ck.gc.RUnlock()
	return f.ck.list(ws)
}

// checkpointCall checks a call on ws's checkpoints before anything is
// read: the workspace, every checkpoint ID it names (an ID of any other
// shape names no checkpoint: NotFound) and path in ws ("": the root, valid
// in every valid workspace); then it opens the store. It returns path
// resolved.
func (f *Store) checkpointCall(ws davfs.Workspace, path string, ids ...string) (davfs.Target, error) {
	if err := f.checkpointWorkspace(ws); err != nil {
		return davfs.Target{}, err
	}
	for _, id := range ids {
		if !checkpointIDRE.MatchString(id) {
			return davfs.Target{}, errCheckpointNotFound(id)
		}
	}
	w, err := f.fs.Resolve(ws, path)
	if err != nil {
		return davfs.Target{}, err
	}
	return w, f.ck.open(f)
}

// GetCheckpoint returns one checkpoint of ws.
func (f *Store) GetCheckpoint(ctx context.Context, ws davfs.Workspace, id string) (Checkpoint, error) {
	if _, err := f.checkpointCall(ws, "", id); err != nil {
		return Checkpoint{}, err
	}
	f.ck.gc.RLock()
	defer f.ck.gc.RUnlock()
	m, err := f.ck.readMeta(ws, id)
	if err != nil {
		return Checkpoint{}, err
	}
	return m.checkpoint(), nil
}

// DeleteCheckpoint removes one checkpoint of ws and the objects no other
// checkpoint shares.
func (f *Store) DeleteCheckpoint(ctx context.Context, ws davfs.Workspace, id string) error {
	if _, err := f.checkpointCall(ws, "", id); err != nil {
		return err
	}
	start := f.now()
	err := f.ck.delete(ws, id)
	f.observeCheckpoint("delete", f.now().Sub(start), 0, err)
	return err
}

func (f *Store) observeCheckpoint(op string, d time.Duration, bytes int64, err error) {
	if f.observer != nil {
		f.observer(op, d, bytes, err)
	}
}

// CheckpointStats are the store's totals (metrics).
type CheckpointStats struct {
	Checkpoints int
	Bytes       int64
}

// CheckpointStats counts the stored checkpoints and object bytes.
func (f *Store) CheckpointStats() (CheckpointStats, error) {
	if f.ck == nil {
		return CheckpointStats{}, nil
	}
	if err := f.ck.open(f); err != nil {
		return CheckpointStats{}, err
	}
	f.ck.gc.RLock()
	defer f.ck.gc.RUnlock()
	metas, err := f.ck.allMetas()
	if err != nil && !errors.Is(err, errCkUnread) { // counts what can be read, as lists do
		return CheckpointStats{}, err
	}
	return CheckpointStats{Checkpoints: len(metas), Bytes: f.ck.total.Load()}, nil
}

// DeniedName is the store's name when dir is a direct child of
// projectsRoot ("" otherwise): the caller adds it to davfs's denied names
// (Config.DeniedNames) before Open, so the store is never a Project and
// never listed. New refuses a store there whose name the FS shows.
func DeniedName(dir, projectsRoot string) string {
	if dir == "" || projectsRoot == "" {
		return ""
	}
	d := filepath.Clean(dir)
	if filepath.Dir(d) == filepath.Clean(projectsRoot) {
		return filepath.Base(d)
	}
	return ""
}

// Observer receives one call per checkpoint operation (metrics).
type Observer func(op string, d time.Duration, bytes int64, err error)

// Options are the dependencies of New.
type Options struct {
	// Logger receives operational detail (never content or host paths).
	// Nil: hclog.NewNullLogger().
	Logger hclog.Logger
	// Now is the clock of checkpoint times and retention. Nil: time.Now.
	Now func() time.Time
	// Observer, if set, is told of every checkpoint operation.
	Observer Observer
}

// Store is the checkpoints of one davfs.FS's workspaces. It is safe for
// concurrent use. A Store without a configured Dir answers every call
// with FailedPrecondition/CHECKPOINTS_DISABLED, and its deletes take no
// automatic checkpoint.
type Store struct {
	fs       *davfs.FS
	cfg      davfs.Config // the FS's, for its limits
	ck       *ckStore     // nil: no store configured
	now      func() time.Time
	log      hclog.Logger
	observer Observer
}

// New returns the checkpoint store of fs configured by cfg. It never fails
// because of the store itself: one that cannot be used turns checkpoints
// off with a reason until OpenCheckpoints succeeds (open.go); only a
// malformed cfg.Dir (not absolute), or a store under the projects root
// whose name fs does not deny (DeniedName), is an error.
func New(fs *davfs.FS, cfg Config, opts Options) (*Store, error) {
	f := &Store{fs: fs, cfg: fs.Config(), now: opts.Now, log: cmp.Or(opts.Logger, hclog.NewNullLogger()), observer: opts.Observer}
	if opts.Now == nil {
		f.now = time.Now
	}
	if n := DeniedName(cfg.Dir, f.cfg.ProjectsRoot); n != "" && fs.Visible(n) {
		return nil, fmt.Errorf("checkpoint: the store %q under the projects root must be a denied name (checkpoint.DeniedName)", n)
	}
	var err error
	if f.ck, err = newCkStore(f, cfg); err != nil {
		return nil, err
	}
	return f, nil
}

// Close releases the store's fds (not the FS's).
func (f *Store) Close() {
	if f.ck != nil {
		f.ck.close()
	}
}

// newErr builds a *davfs.Error. msg must be safe for a client: a relative
// workspace path at most, never a host path or content.
func newErr(code davfs.Code, reason davfs.Reason, cause error, format string, args ...any) *davfs.Error {
	return &davfs.Error{Code: code, Reason: reason, Message: fmt.Sprintf(format, args...), Err: cause}
}

// positiveOr sets *v to d unless it is positive.
func positiveOr[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// childRel is the workspace path of name in the directory dir.
func childRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
