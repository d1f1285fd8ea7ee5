package checkpoint

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint/retention"
	"github.com/agentworkspace/files/davfs/internal/fdio"
)

// The checkpoint store: content-addressed, deduplicated, on the agent's
// volume, reached only through fds held for its directories.
//
//	<dir>/CHECKPOINT-STORE      the marker (see claim)
//	<dir>/objects/<h[:2]>/<h>   a file's bytes; h = hex SHA-256 of them
//	<dir>/tmp/                  objects and manifests being written
//	<dir>/ws/<key>/<id>.manifest  the entries of one checkpoint (JSON)
//	<dir>/ws/<key>/<id>.json      its description; written last, so a
//	                              checkpoint exists once this file does
//
// <key> is "g" for GLOBAL and "p-" + 32 hex digits of the SHA-256 of the
// project name for a PROJECT. An unchanged file costs nothing in the next
// checkpoint: its stat (device, inode, size, mtime, ctime) matches the
// previous manifest's entry, so it is neither read nor stored again, and
// identical bytes anywhere share one object.
//
// Durability: objects are written without one fsync each; one syncfs of
// the store's file system runs before the manifest is written (and the
// manifest and description are fsynced and renamed into place), so a
// crash leaves either a complete checkpoint or none, plus orphan objects
// that the next collection removes.
//
// Locking: gc is held shared by captures, compares, restores and lists,
// exclusively by deletes and pruning (which remove objects).
type ckStore struct {
	fs        *Store // its path validation and logger
	cfg       Config
	path      string // host path (never logged or returned)
	underRoot string // the name under the projects root, or ""
	mu        sync.Mutex
	opened    bool
	failure   *davfs.Error // why the last open failed (CHECKPOINTS_UNAVAILABLE); nil once open
	fd        int          // the store directory (O_PATH)
	objfd     int          // objects/ (O_PATH)
	tmpfd     int          // tmp/ (O_RDONLY: syncfs)
	wsfd      int          // ws/ (O_PATH)
	packfd    int          // packs/ (O_PATH)
	gc        sync.RWMutex
	total     atomic.Int64 // bytes of all objects
	objDirs   sync.Map     // object subdirectories known to exist
	// space reports the free space of the store's volume (statfs of its
	// tmp/; internal tests replace it).
	space     func() (volumeSpace, error)
	busyMu    sync.Mutex
	busy      map[string]int // checkpoints a restore reads: never pruned
	cacheMu   sync.Mutex
	manifests []cachedManifest // most recent first
}

func newCkStore(f *Store, c Config) (*ckStore, error) {
	if c.Dir == "" {
		return nil, nil
	}
	if !filepath.IsAbs(c.Dir) {
		return nil, errors.New("checkpoint: checkpoints dir must be an absolute path")
	}
	positiveOr(&c.MaxPerWorkspace, DefaultCheckpointsPerWorkspace)
	positiveOr(&c.MaxVersionsPerWorkspace, DefaultVersionsPerWorkspace)
	if c.MaxTotalBytes <= 0 {
		c.MaxTotalBytes = DefaultCheckpointBytes
	}
	positiveOr(&c.MaxAge, DefaultCheckpointAge)
	positiveOr(&c.MaxEntries, DefaultCheckpointEntries)
	s := &ckStore{fs: f, cfg: c, path: filepath.Clean(c.Dir), underRoot: DeniedName(c.Dir, f.cfg.ProjectsRoot), fd: -1, objfd: -1, tmpfd: -1, wsfd: -1, packfd: -1,
		busy: map[string]int{}}
	s.space = func() (volumeSpace, error) { return statfsSpace(s.tmpfd) }
	// An existing store is opened now; one that cannot be used is
	// recorded (open.go) and never fails the start: the files
	// do not depend on it. A missing one is created by the first
	// checkpoint or OpenCheckpoints, so Open changes nothing on disk.
	if fd, err := openDirNoFollow(s.path, false); err == nil {
		unix.Close(fd)
		_ = s.open(f)
	} else if fdio.Errno(err) != unix.ENOENT {
		s.failure = errUnusable(errStoreOpen(err))
	}
	return s, nil
}

// openDirNoFollow opens (O_PATH) the absolute directory path one
// component at a time from "/", never following a symlink in any of them
// (O_NOFOLLOW|O_DIRECTORY on each), and, when create is set, creating the
// missing ones (0700). Its errors are bare errnos: they name no path.
func openDirNoFollow(path string, create bool) (int, error) {
	fd, err := unix.Open("/", fdio.DirPath|fdio.Common, 0)
	if err != nil {
		return -1, err
	}
	for _, seg := range strings.Split(filepath.Clean(path), "/") {
		if seg == "" {
			continue
		}
		next, err := unix.Openat(fd, seg, fdio.DirPath|fdio.Common, 0)
		if err == unix.ENOENT && create {
			if err = mkdirSynced(fd, seg); err == nil {
				next, err = unix.Openat(fd, seg, fdio.DirPath|fdio.Common, 0)
			}
		}
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// mkdirSynced creates the directory name (0700) in dirfd (O_PATH or not)
// unless it exists, then fsyncs dirfd: also when it existed, since a call
// whose fsync failed, or a concurrent one, may have created it.
func mkdirSynced(dirfd int, name string) error {
	if err := unix.Mkdirat(dirfd, name, 0o700); err != nil && err != unix.EEXIST {
		return err
	}
	rfd, err := unix.Openat(dirfd, ".", fdio.DirRead|fdio.Common, 0)
	if err != nil {
		return err
	}
	defer unix.Close(rfd)
	return fdio.FsyncDir(rfd)
}

// errStoreOpen tells a path that is not a plain chain of directories (a
// symlink or a file on it) from other store errors.
func errStoreOpen(err error) error {
	if e := fdio.Errno(err); e == unix.ELOOP || e == unix.ENOTDIR {
		return errUnusableWhy(err, "it is a symbolic link or a file, or its path passes through one (it must be a folder whose path has neither)")
	}
	return errStore(err)
}

// storeMarker names the file that marks a directory as a checkpoint store
// this code created: an existing non-empty directory without it (and
// without the layout of an older store) is never taken over, since opening
// a store empties its tmp/ and collection empties objects/ and packs/.
const storeMarker = "CHECKPOINT-STORE"

const storeMarkerText = "agent workspace files: checkpoint store (docs/checkpoints.md); do not put anything else here\n"

func errNotAStore() *davfs.Error {
	return errUnusableWhy(nil, "it is a folder that is not a checkpoint store (not empty, and no store marker); empty it, or choose an empty or new folder")
}

// claim checks that the store directory fd (O_PATH) is a store, or empty,
// and writes the marker when it is missing: an empty directory becomes a
// store, and so does a store of an older version without the marker,
// recognised by holding nothing but its directories objects/, ws/, tmp/
// (and packs/).
func claim(fd int) error {
	rfd, err := unix.Openat(fd, ".", fdio.DirRead|fdio.Common, 0)
	if err != nil {
		return errStore(err)
	}
	defer unix.Close(rfd)
	ents, err := fdio.ReadDirents(rfd)
	if err != nil {
		return errStore(err)
	}
	layout := map[string]bool{"objects": false, "ws": false, "tmp": false, "packs": true}
	legacy := len(ents) > 0
	for _, d := range ents {
		var st unix.Stat_t
		if d.Name == storeMarker {
			if fdio.Fstatat(rfd, d.Name, &st) == nil && fdio.IsType(&st, unix.S_IFREG) && st.Nlink == 1 {
				return nil
			}
			return errNotAStore()
		}
		if _, ok := layout[d.Name]; !ok || fdio.Fstatat(rfd, d.Name, &st) != nil || !fdio.IsType(&st, unix.S_IFDIR) {
			legacy = false
			continue
		}
		layout[d.Name] = true
	}
	if len(ents) > 0 && (!legacy || slices.Contains(slices.Collect(maps.Values(layout)), false)) {
		return errNotAStore()
	}
	mfd, err := unix.Openat(rfd, storeMarker, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|fdio.Common, 0o600)
	if err != nil {
		return errStore(err)
	}
	_, werr := unix.Write(mfd, []byte(storeMarkerText))
	if werr == nil {
		werr = unix.Fsync(mfd)
	}
	unix.Close(mfd)
	if werr != nil {
		unix.Unlinkat(rfd, storeMarker, 0)
		return errStore(werr)
	}
	if err := fdio.FsyncDir(rfd); err != nil {
		return errStore(err)
	}
	return nil
}

func (s *ckStore) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, fd := range []int{s.fd, s.objfd, s.tmpfd, s.wsfd, s.packfd} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	s.fd, s.objfd, s.tmpfd, s.wsfd, s.packfd, s.opened = -1, -1, -1, -1, -1, false
}

func errStore(err error) error {
	var de *davfs.Error
	if errors.As(err, &de) {
		return de
	}
	if fdio.Errno(err) == unix.ENOSPC || fdio.Errno(err) == unix.EDQUOT {
		return newErr(davfs.CodeResourceExhausted, davfs.ReasonNoSpace, err, "no space left in the checkpoint store")
	}
	return newErr(davfs.CodeInternal, davfs.ReasonInternal, err, "checkpoint store error")
}

// open creates (0700) and opens the store, checks where it is, sweeps tmp/
// and counts the object bytes. Once: after a failure it returns that
// failure (CHECKPOINTS_UNAVAILABLE) until reopen succeeds.
func (s *ckStore) open(f *Store) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opened {
		return nil
	}
	if s.failure != nil {
		return s.failure
	}
	return s.openLocked(f)
}

// reopen is open trying again after a failure (OpenCheckpoints).
func (s *ckStore) reopen(f *Store) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opened {
		return nil
	}
	return s.openLocked(f)
}

// openLocked makes one attempt at opening the store and records its
// outcome. s.mu is held.
func (s *ckStore) openLocked(f *Store) error {
	if err := s.openDirs(f); err != nil {
		s.failure = errUnusable(err)
		return s.failure
	}
	s.failure = nil
	// Leftovers of an interrupted write.
	if ents, err := fdio.ReadDirents(s.tmpfd); err == nil {
		for _, d := range ents {
			unix.Unlinkat(s.tmpfd, d.Name, 0)
		}
	}
	s.recount(nil, nil)
	s.opened = true
	return nil
}

// openDirs opens (creating them if missing) the store and its
// subdirectories, after checking where it is and that it is a store.
func (s *ckStore) openDirs(f *Store) error {
	var fd int
	var err error
	if s.underRoot != "" {
		if err = mkdirSynced(f.fs.RootFD(davfs.ScopeProject), s.underRoot); err != nil {
			return errStore(err)
		}
		fd, err = unix.Openat(f.fs.RootFD(davfs.ScopeProject), s.underRoot, fdio.DirPath|fdio.Common, 0)
	} else {
		fd, err = openDirNoFollow(s.path, true)
	}
	if err != nil {
		return errStoreOpen(err)
	}
	if err := s.checkPlace(f, fd); err != nil {
		unix.Close(fd)
		return err
	}
	if err := claim(fd); err != nil {
		unix.Close(fd)
		return err
	}
	sub := func(name string, flags int) (int, error) {
		if err := mkdirSynced(fd, name); err != nil {
			return -1, errSubdir(name, err)
		}
		sfd, err := unix.Openat(fd, name, flags|fdio.Common, 0)
		if err != nil {
			return -1, errSubdir(name, err)
		}
		return sfd, nil
	}
	objfd, err1 := sub("objects", fdio.DirPath)
	tmpfd, err2 := sub("tmp", fdio.DirRead)
	wsfd, err3 := sub("ws", fdio.DirPath)
	packfd, err4 := sub("packs", fdio.DirPath)
	if err := cmp.Or(err1, err2, err3, err4); err != nil {
		for _, x := range []int{fd, objfd, tmpfd, wsfd, packfd} {
			if x >= 0 {
				unix.Close(x)
			}
		}
		return err
	}
	s.fd, s.objfd, s.tmpfd, s.wsfd, s.packfd = fd, objfd, tmpfd, wsfd, packfd
	return nil
}

func errStorePlace() *davfs.Error {
	return errUnusableWhy(nil, "it is inside a project or CODEX_HOME, or contains one of them")
}

// checkPlace walks up from the store by fds (".."): it must not be inside
// CODEX_HOME, nor inside the projects root except as a direct child whose
// name is denied; and neither root may be inside it.
// fdIdentity is a file's device and inode.
type fdIdentity struct{ dev, ino uint64 }

func (s *ckStore) checkPlace(f *Store, fd int) error {
	id := func(fd int) (fdIdentity, error) {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fdIdentity{}, err
		}
		return fdIdentity{dev: st.Dev, ino: st.Ino}, nil
	}
	self, err := id(fd)
	if err != nil {
		return errStore(err)
	}
	projfd, codexfd := f.fs.RootFD(davfs.ScopeProject), f.fs.RootFD(davfs.ScopeGlobal)
	proj, _ := id(projfd)
	codex, _ := id(codexfd)
	// ancestors returns the identities from fd up to the file system root.
	ancestors := func(fd int) ([]fdIdentity, error) {
		var out []fdIdentity
		cur, err := unix.Dup(fd)
		if err != nil {
			return nil, err
		}
		defer func() { unix.Close(cur) }()
		for range 4096 {
			i, err := id(cur)
			if err != nil {
				return nil, err
			}
			if len(out) > 0 && out[len(out)-1] == i {
				return out, nil // "/" is its own parent
			}
			out = append(out, i)
			next, err := unix.Openat(cur, "..", fdio.DirPath|unix.O_CLOEXEC, 0)
			if err != nil {
				return nil, err
			}
			unix.Close(cur)
			cur = next
		}
		return out, nil
	}
	up, err := ancestors(fd)
	if err != nil {
		return errStore(err)
	}
	for i, a := range up {
		// Never inside CODEX_HOME; inside the projects root only as the
		// direct child underRoot names.
		var st unix.Stat_t
		if a == codex || (a == proj && (i != 1 || s.underRoot == "" ||
			fdio.Fstatat(projfd, s.underRoot, &st) != nil || st.Dev != self.dev || st.Ino != self.ino)) {
			return errStorePlace()
		}
	}
	for _, rfd := range []int{projfd, codexfd} {
		up, err := ancestors(rfd)
		if err != nil {
			return errStore(err)
		}
		if slices.Contains(up, self) {
			return errStorePlace()
		}
	}
	return nil
}

// eachDir calls fn with every name in the directory dirfd, and the name
// open O_RDONLY (a directory) or the error opening it. Its error is that
// of reading dirfd.
func eachDir(dirfd int, fn func(name string, dfd int, err error)) error {
	rfd, err := unix.Openat(dirfd, ".", fdio.DirRead|fdio.Common, 0)
	if err != nil {
		return err
	}
	defer unix.Close(rfd)
	ents, err := fdio.ReadDirents(rfd)
	if err != nil {
		return err
	}
	for _, d := range ents {
		dfd, err := unix.Openat(rfd, d.Name, fdio.DirRead|fdio.Common, 0)
		if err == nil && ckReadTestHook != nil {
			if err = ckReadTestHook(d.Name); err != nil {
				unix.Close(dfd)
			}
		}
		fn(d.Name, dfd, err)
		if err == nil {
			unix.Close(dfd)
		}
	}
	return nil
}

// eachFile calls fn for every regular file in the directory dfd (O_RDONLY).
func eachFile(dfd int, fn func(dirfd int, name string, st *unix.Stat_t)) {
	ents, _ := fdio.ReadDirents(dfd)
	for _, e := range ents {
		var st unix.Stat_t
		if fdio.Fstatat(dfd, e.Name, &st) == nil && fdio.IsType(&st, unix.S_IFREG) {
			fn(dfd, e.Name, &st)
		}
	}
}

// eachObject calls objects for every regular file under objects/, then
// packs for every one in packs/.
func (s *ckStore) eachObject(objects, packs func(dirfd int, name string, st *unix.Stat_t)) {
	eachDir(s.objfd, func(_ string, dfd int, err error) {
		if err == nil {
			eachFile(dfd, objects)
		}
	})
	if rfd, err := unix.Openat(s.packfd, ".", fdio.DirRead|fdio.Common, 0); err == nil {
		eachFile(rfd, packs)
		unix.Close(rfd)
	}
}

// recount sets total to the bytes of every object and pack, first removing
// those not named in live and livePacks (nil: none is removed).
func (s *ckStore) recount(live, livePacks map[string]struct{}) {
	var total int64
	keep := func(set map[string]struct{}) func(int, string, *unix.Stat_t) {
		return func(dfd int, name string, st *unix.Stat_t) {
			if _, ok := set[name]; ok || set == nil || unix.Unlinkat(dfd, name, 0) != nil {
				total += occupied(st)
			}
		}
	}
	s.eachObject(keep(live), keep(livePacks))
	s.total.Store(total)
}

// ckWorkspaceKey names ws's directory under ws/.
func ckWorkspaceKey(ws davfs.Workspace) string {
	if ws.Scope == davfs.ScopeGlobal {
		return "g"
	}
	h := sha256.Sum256([]byte(ws.Project))
	return "p-" + hex.EncodeToString(h[:16])
}

// validHash reports whether h is 64 lower-case hex digits (an object name).
func validHash(h string) bool {
	return len(h) == 64 && strings.Trim(h, "0123456789abcdef") == ""
}

// objDir opens (creating it if asked) objects/<h[:2]> (O_PATH).
func (s *ckStore) objDir(h string, create bool) (int, error) {
	name := h[:2]
	if create {
		if _, ok := s.objDirs.Load(name); !ok {
			if err := unix.Mkdirat(s.objfd, name, 0o700); err != nil && err != unix.EEXIST {
				return -1, err
			}
			s.objDirs.Store(name, true)
		}
	}
	return unix.Openat(s.objfd, name, fdio.DirPath|fdio.Common, 0)
}

// putTemp moves the complete temp file tmp (in tmp/) to the object h,
// which occupies size bytes. It returns the bytes added (0 when the
// object existed: deduplicated).
func (s *ckStore) putTemp(tmp, h string, size int64) (int64, error) {
	dfd, err := s.objDir(h, true)
	if err != nil {
		unix.Unlinkat(s.tmpfd, tmp, 0)
		return 0, err
	}
	defer unix.Close(dfd)
	if err := unix.Renameat2(s.tmpfd, tmp, dfd, h, unix.RENAME_NOREPLACE); err != nil {
		unix.Unlinkat(s.tmpfd, tmp, 0)
		if err == unix.EEXIST {
			return 0, nil
		}
		return 0, err
	}
	s.total.Add(size)
	return size, nil
}

// openSingle opens name in dirfd for reading, never through a symlink,
// and only if it is a single-link regular file whose size fits (else the
// error bad). It returns the fd and the size.
func openSingle(dirfd int, name string, fits func(size int64) bool, bad string) (int, int64, error) {
	fd, err := unix.Openat(dirfd, name, fdio.File|fdio.Common, 0)
	if err != nil {
		return -1, 0, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, 0, err
	}
	if !fdio.IsType(&st, unix.S_IFREG) || st.Nlink != 1 || !fits(st.Size) {
		unix.Close(fd)
		return -1, 0, errors.New(bad)
	}
	return fd, st.Size, nil
}

// ckEntry is one captured name. Dev, Ino and Ctime only serve to reuse the
// hash in the next checkpoint; they are never returned.
type ckEntry struct {
	Path  string `json:"p"`
	Dir   bool   `json:"d,omitempty"`
	Mode  uint32 `json:"m"`
	Size  int64  `json:"s,omitempty"`
	Hash  string `json:"h,omitempty"`
	Mtime int64  `json:"t,omitempty"`
	Dev   uint64 `json:"dv,omitempty"`
	Ino   uint64 `json:"i,omitempty"`
	Ctime int64  `json:"c,omitempty"`
	// Key: the stat may stand for the content next time (the file's ctime
	// was well before it was read, so a later change moves the ctime).
	Key bool `json:"k,omitempty"`
	// Pack and Off locate a small file's bytes in packs/<Pack>.pack;
	// empty Pack: the loose object Hash.
	Pack string `json:"pk,omitempty"`
	Off  int64  `json:"o,omitempty"`
}

type ckManifest struct {
	Version int       `json:"version"`
	Entries []ckEntry `json:"entries"` // sorted by Path
}

// ckMeta is the stored description of a checkpoint.
type ckMeta struct {
	Version  int       `json:"version"`
	ID       string    `json:"id"`
	Scope    string    `json:"scope"` // "project" or "global"
	Project  string    `json:"project,omitempty"`
	Root     string    `json:"root,omitempty"`
	Label    string    `json:"label,omitempty"`
	Operator string    `json:"operator,omitempty"`
	Created  time.Time `json:"created"`
	Reason   string    `json:"reason,omitempty"`
	Files    int       `json:"files"`
	Dirs     int       `json:"dirs"`
	Size     int64     `json:"size"`
	Skipped  int       `json:"skipped"`
}

func (m *ckMeta) workspace() davfs.Workspace {
	if m.Scope == "global" {
		return davfs.Workspace{Scope: davfs.ScopeGlobal}
	}
	return davfs.Workspace{Scope: davfs.ScopeProject, Project: m.Project}
}

func (m *ckMeta) checkpoint() Checkpoint {
	return Checkpoint{ID: m.ID, Workspace: m.workspace(), Root: m.Root, Label: m.Label, Operator: m.Operator,
		Created: m.Created, Reason: m.Reason, Files: m.Files, Dirs: m.Dirs, Size: m.Size, Skipped: m.Skipped}
}

// maxManifestBytes bounds what is read back as one manifest, and a
// capture whose manifest would be larger fails (CHECKPOINT_LIMIT), so
// every manifest written can be read. 200,000 entries (the default
// maxEntries) take about 50 MiB with paths of 100 bytes.
const maxManifestBytes = 128 << 20

// readSmall reads the regular single-link file name in dirfd (never a
// symlink) of at most max bytes.
func readSmall(dirfd int, name string, max int64) ([]byte, error) {
	fd, size, err := openSingle(dirfd, name, func(n int64) bool { return n <= max }, "not a single-link regular file within bounds")
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b, ok, err := fdio.ReadAllAt(fd, size, nil)
	if err == nil && !ok {
		err = errors.New("changed while read")
	}
	return b, err
}

// writeAtomic writes b as name in dirfd (O_RDONLY): a temp file in tmp/,
// fsync, rename, fsync of dirfd.
func (s *ckStore) writeAtomic(dirfd int, name string, b []byte) error {
	t, err := s.tempWith(b)
	if err != nil {
		return err
	}
	if err := unix.Fsync(t.FD); err != nil {
		t.Discard(s.tmpfd)
		return err
	}
	unix.Close(t.FD)
	if err := unix.Renameat(s.tmpfd, t.Name, dirfd, name); err != nil {
		unix.Unlinkat(s.tmpfd, t.Name, 0)
		return err
	}
	return fdio.FsyncDir(dirfd)
}

// wsDir opens ws/<key> (O_PATH).
func (s *ckStore) wsDir(ws davfs.Workspace) (int, error) {
	return unix.Openat(s.wsfd, ckWorkspaceKey(ws), fdio.DirPath|fdio.Common, 0)
}

func (s *ckStore) readMeta(ws davfs.Workspace, id string) (*ckMeta, error) {
	dfd, err := s.wsDir(ws)
	if err != nil {
		return nil, errCheckpointNotFound(id)
	}
	defer unix.Close(dfd)
	m, err := readMetaAt(dfd, id)
	if err != nil || m.workspace() != ws {
		return nil, errCheckpointNotFound(id)
	}
	return m, nil
}

func readMetaAt(dfd int, id string) (*ckMeta, error) {
	b, err := readSmall(dfd, id+".json", 1<<20)
	if err == nil && ckReadTestHook != nil {
		err = ckReadTestHook(id + ".json")
	}
	if err != nil {
		return nil, err
	}
	var m ckMeta
	if err := json.Unmarshal(b, &m); err != nil || m.ID != id {
		return nil, errors.New("bad checkpoint description")
	}
	return &m, nil
}

// readManifest returns a checkpoint's manifest, validated (see
// checkManifest), from the small cache of recent ones when it is there (a
// manifest never changes once written). Callers must not modify it.
func (s *ckStore) readManifest(ws davfs.Workspace, id string) (*ckManifest, error) {
	key := ckWorkspaceKey(ws) + "/" + id
	if m := s.cached(key); m != nil {
		return m, nil
	}
	dfd, err := s.wsDir(ws)
	if err != nil {
		return nil, errCheckpointNotFound(id)
	}
	defer unix.Close(dfd)
	meta, err := readMetaAt(dfd, id)
	if err != nil || meta.workspace() != ws {
		return nil, errCheckpointNotFound(id)
	}
	s.makeRoom(meta.Files + meta.Dirs)
	m, err := s.loadManifest(dfd, meta)
	if err == nil {
		internPacks(m)
		s.cache(key, m)
	}
	return m, err
}

// manifestCacheSize: recent manifests kept decoded (a 10,000-file one is
// a few MiB), so compare and restore of one path do not decode it again.
const manifestCacheSize = 4

type cachedManifest struct {
	key string
	m   *ckManifest
}

func (s *ckStore) cached(key string) *ckManifest {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	for i, c := range s.manifests {
		if c.key == key {
			s.manifests = append(append([]cachedManifest{c}, s.manifests[:i]...), s.manifests[i+1:]...)
			return c.m
		}
	}
	return nil
}

func (s *ckStore) cache(key string, m *ckManifest) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	s.manifests = append([]cachedManifest{{key, m}}, s.manifests[:min(len(s.manifests), manifestCacheSize-1)]...)
	s.trimCache()
}

// loadManifest reads, decodes and validates the manifest of meta's
// checkpoint in its ws/<key> directory dfd.
func (s *ckStore) loadManifest(dfd int, meta *ckMeta) (*ckManifest, error) {
	m, err := s.decodeManifest(dfd, meta)
	switch {
	case fdio.Errno(err) == unix.ENOENT:
		return nil, errDamaged(meta.ID, errors.New("manifest missing"))
	case fdio.Errno(err) != 0:
		return nil, errStore(err)
	case err == nil:
		err = s.checkManifest(meta, m)
	}
	if err != nil {
		return nil, errDamaged(meta.ID, err)
	}
	return m, nil
}

// checkManifest validates a decoded manifest before anything uses it, so
// that a tampered store can only make a checkpoint unusable, never make a
// restore panic or stop half done: the checkpoint's root and every path
// must be a valid request path of its workspace (no empty, "." or ".."
// segment, not absolute, no NUL, within the length and depth limits, no
// denied or reserved name, inside GLOBAL's allowlist) inside the root;
// the paths strictly sorted (so unique); every entry's parent, below the
// root, a directory of the manifest; a file's hash 64 lower-case hex
// digits, its pack reference a checkpoint ID with an offset that does
// not overflow; sizes and offsets >= 0; modes permission bits only. The
// causes it returns name no path (they reach logs as causes only).
func (s *ckStore) checkManifest(meta *ckMeta, m *ckManifest) error {
	f, ws := s.fs, meta.workspace()
	if m.Version != 1 {
		return errors.New("unknown manifest version")
	}
	valid := func(p string) error { return f.fs.ValidPath(ws, p) }
	if meta.Root != "" && valid(meta.Root) != nil {
		return errors.New("invalid root")
	}
	dirs := make(map[string]struct{})
	for i := range m.Entries {
		e := &m.Entries[i]
		switch {
		case e.Path == "":
			return fmt.Errorf("entry %d: empty path", i)
		case i > 0 && e.Path <= m.Entries[i-1].Path:
			return fmt.Errorf("entry %d: paths not sorted or not unique", i)
		case valid(e.Path) != nil:
			return fmt.Errorf("entry %d: invalid path", i)
		case !within(e.Path, meta.Root):
			return fmt.Errorf("entry %d: outside the checkpoint's root", i)
		case e.Mode&^0o7777 != 0:
			return fmt.Errorf("entry %d: invalid mode", i)
		case e.Size < 0 || e.Off < 0:
			return fmt.Errorf("entry %d: negative size or offset", i)
		}
		if parent := parentPath(e.Path); e.Path != meta.Root {
			if _, ok := dirs[parent]; !ok && parent != "" {
				return fmt.Errorf("entry %d: its parent is not a directory of the checkpoint", i)
			}
		}
		if e.Dir {
			if e.Hash != "" || e.Pack != "" || e.Size != 0 {
				return fmt.Errorf("entry %d: a directory with content", i)
			}
			dirs[e.Path] = struct{}{}
			continue
		}
		if !validHash(e.Hash) {
			return fmt.Errorf("entry %d: invalid hash", i)
		}
		if e.Pack != "" && (!checkpointIDRE.MatchString(e.Pack) || e.Off > math.MaxInt64-e.Size) {
			return fmt.Errorf("entry %d: invalid pack reference", i)
		}
	}
	return nil
}

// list returns ws's checkpoints, newest first.
func (s *ckStore) list(ws davfs.Workspace) ([]Checkpoint, error) {
	dfd, err := unix.Openat(s.wsfd, ckWorkspaceKey(ws), fdio.DirRead|fdio.Common, 0)
	if errors.Is(err, unix.ENOENT) {
		return []Checkpoint{}, nil
	}
	if err != nil {
		return nil, errStore(err)
	}
	defer unix.Close(dfd)
	metas, err := metasIn(dfd)
	if err != nil && !errors.Is(err, errCkUnread) {
		return nil, errStore(err)
	}
	out := make([]Checkpoint, 0, len(metas))
	for _, m := range metas {
		if m.workspace() == ws {
			out = append(out, m.checkpoint())
		}
	}
	slices.SortFunc(out, func(a, b Checkpoint) int { return strings.Compare(b.ID, a.ID) })
	return out, nil
}

// metasIn reads every description in one ws/<key> directory, newly
// opened O_RDONLY. One that cannot be opened or read (an errno: EMFILE,
// EIO; not ENOENT, nor a description that is not one) is left out and
// reported as errCkUnread, with the others.
func metasIn(rfd int) ([]*ckMeta, error) {
	ents, err := fdio.ReadDirents(rfd)
	if err != nil {
		return nil, err
	}
	var out []*ckMeta
	var lost error
	for _, d := range ents {
		id, ok := strings.CutSuffix(d.Name, ".json")
		if !ok || !checkpointIDRE.MatchString(id) {
			continue
		}
		m, err := readMetaAt(rfd, id)
		if err == nil {
			out = append(out, m)
		} else if fdio.Errno(err) != unix.ENOENT {
			lost = &ckUnread{id: id, err: err}
		}
	}
	return out, lost
}

// errCkUnread marks a list of checkpoints that may be incomplete: a
// ws/<key> directory or a description could not be opened, read or
// validated (anything but ENOENT: an errno, a hard-linked or oversized
// file, bad JSON). A *ckUnread names which (workspace_key, checkpoint_id).
var errCkUnread = errors.New("a checkpoint cannot be read")

type ckUnread struct {
	key, id string
	err     error
}

func (e *ckUnread) Error() string        { return errCkUnread.Error() + ": " + e.err.Error() }
func (e *ckUnread) Unwrap() error        { return e.err }
func (e *ckUnread) Is(target error) bool { return target == errCkUnread }

// ckUnreadLog is the log attributes of an errCkUnread (no path: its
// causes are errnos or fixed texts).
func ckUnreadLog(err error) []any {
	var u *ckUnread
	if !errors.As(err, &u) {
		return []any{"error", fdio.Errno(err).Error()}
	}
	cause := u.err.Error()
	if e := fdio.Errno(u.err); e != 0 {
		cause = e.Error()
	}
	return []any{"workspace_key", u.key, "checkpoint_id", u.id, "error", cause}
}

// ckKeyRE matches the names ckWorkspaceKey gives.
var ckKeyRE = regexp.MustCompile(`^(g|p-[0-9a-f]{32})$`)

// ckReadTestHook, when set (tests only), fails the open of a ws/<key>
// directory (name: the key) or of a description (name: <id>.json).
var ckReadTestHook func(name string) error

// ckRef is one stored checkpoint, for limits and collection.
type ckRef struct {
	meta *ckMeta
	key  string
}

// allMetas reads the descriptions of every workspace. When a ws/<key>
// directory or a description cannot be opened or read, the others are
// returned with errCkUnread: nothing may then be freed on that list. Any
// other error is the ws/ listing's (and no list).
func (s *ckStore) allMetas() ([]ckRef, error) {
	var out []ckRef
	var lost error
	err := eachDir(s.wsfd, func(key string, dfd int, err error) {
		if !ckKeyRE.MatchString(key) {
			return
		}
		var metas []*ckMeta
		if err == nil {
			metas, err = metasIn(dfd)
		}
		var u *ckUnread
		if errors.As(err, &u) {
			u.key, lost = key, u
		} else if err != nil && fdio.Errno(err) != unix.ENOENT {
			lost = &ckUnread{key: key, err: err}
		}
		for _, m := range metas {
			if ckWorkspaceKey(m.workspace()) == key {
				out = append(out, ckRef{meta: m, key: key})
			} else {
				lost = &ckUnread{key: key, id: m.ID, err: errors.New("description of another workspace")}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return out, lost
}

// remove deletes one checkpoint's files: the description first (then it
// no longer exists), then the manifest.
func (s *ckStore) remove(key, id string) error {
	cacheKey := key + "/" + id
	s.cacheMu.Lock()
	s.manifests = slices.DeleteFunc(s.manifests, func(c cachedManifest) bool { return c.key == cacheKey })
	s.cacheMu.Unlock()
	dfd, err := unix.Openat(s.wsfd, key, fdio.DirRead|fdio.Common, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := unix.Unlinkat(dfd, id+".json", 0); err != nil && err != unix.ENOENT {
		return err
	}
	unix.Unlinkat(dfd, id+".manifest", 0)
	return fdio.FsyncDir(dfd)
}

func (s *ckStore) delete(ws davfs.Workspace, id string) error {
	s.gc.Lock()
	defer s.gc.Unlock()
	if _, err := s.readMeta(ws, id); err != nil && !s.described(ws, id) {
		return err
	} // one that exists but cannot be read or validated can be deleted (it would jam collection)
	if err := s.remove(ckWorkspaceKey(ws), id); err != nil {
		return errStore(err)
	}
	return s.collect(nil)
}

// described reports whether ws/<key>/<id>.json exists (readable or not).
func (s *ckStore) described(ws davfs.Workspace, id string) bool {
	dfd, err := s.wsDir(ws)
	if err != nil {
		return false
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	return fdio.Fstatat(dfd, id+".json", &st) == nil
}

// collect removes every object no remaining checkpoint references and
// every manifest without a description (refs: the checkpoints to keep, nil
// to read them). It runs with gc held exclusively. A manifest that cannot
// be read or decoded (damaged, oversized) may name anything: that
// collection then frees no object or pack, and the caller goes on (a
// warning is logged; the checkpoint can be deleted, which frees them next
// time). So does a list that may be incomplete (errCkUnread: a checkpoint
// left out of it would lose its objects), which also keeps every manifest.
// Its error is only the store's own (the ws/ listing).
func (s *ckStore) collect(refs []ckRef) error {
	if refs == nil {
		var unread error
		if refs, unread = s.allMetas(); unread != nil && !errors.Is(unread, errCkUnread) {
			return errStore(unread)
		} else if unread != nil {
			s.fs.log.Warn("checkpoint store: a checkpoint cannot be read; this collection frees nothing (retry, or delete it)",
				ckUnreadLog(unread)...)
			s.recount(nil, nil)
			return nil
		}
	}
	live := map[string]struct{}{}
	livePacks := map[string]struct{}{}
	listed := map[string]bool{} // "<key>/<id>"
	damaged := 0
	for _, r := range refs {
		listed[r.key+"/"+r.meta.ID] = true
		m, ok := s.rawManifest(r)
		if !ok {
			damaged++
			s.fs.log.Warn("checkpoint store: a manifest cannot be read or decoded; this collection frees nothing",
				"workspace_key", r.key, "checkpoint_id", r.meta.ID)
			continue
		}
		for _, e := range m.Entries {
			if e.Pack != "" {
				livePacks[e.Pack+".pack"] = struct{}{}
			} else if e.Hash != "" {
				live[e.Hash] = struct{}{}
			}
		}
	}
	if damaged > 0 {
		live, livePacks = nil, nil // free nothing
	}
	s.recount(live, livePacks)
	// The manifests without a description (a create interrupted before
	// its description).
	eachDir(s.wsfd, func(key string, dfd int, err error) {
		if err != nil {
			return
		}
		ents, _ := fdio.ReadDirents(dfd)
		for _, d := range ents {
			var st unix.Stat_t
			if id, ok := strings.CutSuffix(d.Name, ".manifest"); ok && !listed[key+"/"+id] &&
				fdio.Errno(fdio.Fstatat(dfd, id+".json", &st)) == unix.ENOENT {
				unix.Unlinkat(dfd, d.Name, 0)
			}
		}
	})
	return nil
}

// create captures w, commits the checkpoint and applies the limits.
func (s *ckStore) create(ctx context.Context, f *Store, w davfs.Target, opts CheckpointOptions, reason string, start time.Time) (Checkpoint, error) {
	s.pruneAge(f)
	s.gc.RLock()
	id := newCheckpointID(start)
	held := reason == CheckpointBeforeWebDAVWrite
	if held {
		// A per-file version is held from before it exists until its
		// write has finished: KeepVersion hands the hold to its caller,
		// which releases it (KeepVersion's release). A checkpoint any other
		// call creates meanwhile can then never evict it, however old.
		s.hold(id)
	}
	sc := newScanner(ctx, f, w, s, s.previous(w))
	sc.pack = &packWriter{s: s, id: id}
	defer sc.pack.discard()
	err := sc.scan()
	if _, ok := sc.blocked[w.Path()]; ok && err == nil && !w.IsRoot() {
		err = newErr(davfs.CodeFailedPrecondition, davfs.ReasonNotRegular, nil, "%q cannot be checkpointed (a link, a special file or a denied name)", w.Path())
	}
	if err == nil && sc.added > sc.budget.bytes {
		err = sc.budget.err()
	}
	var meta *ckMeta
	if err == nil {
		if perr := sc.pack.commit(); perr != nil {
			err = errStore(perr)
		}
	}
	if err == nil {
		err = beforeCommit(ctx)
	}
	if err == nil && sc.loose > 0 {
		// One syncfs makes every loose object durable before the manifest
		// that names them (the pack was fsynced on its own).
		if serr := unix.Syncfs(s.tmpfd); serr != nil {
			err = errStore(serr)
		}
	}
	if err == nil {
		meta = &ckMeta{Version: 1, ID: id, Root: w.Path(), Label: opts.Label, Operator: opts.Operator, Created: start.UTC(),
			Reason: reason, Skipped: len(sc.blocked)}
		if w.Workspace().Scope == davfs.ScopeGlobal {
			meta.Scope = "global"
		} else {
			meta.Scope, meta.Project = "project", w.Workspace().Project
		}
		for _, e := range sc.out {
			if e.Dir {
				meta.Dirs++
			} else {
				meta.Files++
				meta.Size += e.Size
			}
		}
		err = s.commit(w.Workspace(), meta, &ckManifest{Version: 1, Entries: sc.out})
	}
	s.gc.RUnlock()
	if err != nil && sc.added > 0 {
		// Objects only this failed checkpoint stored.
		s.gc.Lock()
		s.collect(nil)
		s.gc.Unlock()
	}
	if err == nil {
		err = s.enforce(f, w.Workspace(), id)
	}
	if err != nil {
		if held {
			s.release(id)
		}
		return Checkpoint{}, err
	}
	return meta.checkpoint(), nil
}

// previous is the reference a capture of w starts from: the newest
// checkpoint of its workspace, whole for a capture of the workspace; for
// a capture of one path (before a delete or restore, a per-file version)
// only that part of it (scopedManifest: found by a binary search, never
// cached, so it does not evict the manifest a restore is about to read).
// nil: none (every file is read).
func (s *ckStore) previous(w davfs.Target) *ckManifest {
	cks, err := s.list(w.Workspace())
	if err != nil || len(cks) == 0 {
		return nil
	}
	if w.IsRoot() {
		m, _ := s.readManifest(w.Workspace(), cks[0].ID)
		return m
	}
	return s.scopedManifest(w.Workspace(), cks[0].ID, w.Path())
}

// commitMargin: checkpoint work about to keep its result (a capture
// about to write its description, a restore about to make its first
// change) is abandoned instead when its caller's deadline is closer than
// this: the answer could not reach the caller in time, and a caller told
// that a checkpoint failed must never find it kept (issue #23).
const commitMargin = time.Second

// beforeCommit is davfs.ContextError when ctx is done or its deadline is within
// commitMargin, else nil.
func beforeCommit(ctx context.Context) error {
	if ctx.Err() != nil {
		return davfs.ContextError(ctx)
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < commitMargin {
		return newErr(davfs.CodeUnavailable, davfs.ReasonInternal, context.DeadlineExceeded,
			"the checkpoint work did not finish within the call's deadline; nothing of it was kept")
	}
	return nil
}

func errCheckpointLimit(why string) *davfs.Error {
	return newErr(davfs.CodeResourceExhausted, davfs.ReasonCheckpointLimit, nil, "the checkpoint does not fit: %s; delete checkpoints or raise the limit", why)
}

// commit writes the manifest (streamed: writeAtomicManifest), then the
// description.
func (s *ckStore) commit(ws davfs.Workspace, meta *ckMeta, m *ckManifest) error {
	jb, err := json.Marshal(meta)
	if err != nil {
		return errStore(err)
	}
	key := ckWorkspaceKey(ws)
	if err := mkdirSynced(s.wsfd, key); err != nil {
		return errStore(err)
	}
	dfd, err := unix.Openat(s.wsfd, key, fdio.DirRead|fdio.Common, 0)
	if err != nil {
		return errStore(err)
	}
	defer unix.Close(dfd)
	if err := s.writeAtomicManifest(dfd, meta.ID+".manifest", m); err != nil {
		return errStore(err)
	}
	if err := s.writeAtomic(dfd, meta.ID+".json", jb); err != nil {
		unix.Unlinkat(dfd, meta.ID+".manifest", 0)
		return errStore(err)
	}
	s.cache(key+"/"+meta.ID, m)
	return nil
}

// pruneAge removes checkpoints older than MaxAge (retention.Expired).
func (s *ckStore) pruneAge(f *Store) {
	s.gc.Lock()
	defer s.gc.Unlock()
	refs, err := s.allMetas()
	if err != nil {
		return
	}
	p := s.policy(f.now(), "", "")
	old := map[string]bool{}
	for _, c := range p.Expired(s.retained(refs)) {
		old[c.Workspace+"/"+c.ID] = true
	}
	if keep, removed := s.removeWhere(refs, func(r ckRef) bool { return old[r.key+"/"+r.meta.ID] }); removed {
		s.collect(keep)
	}
}

// policy is the store's retention policy as of now, for the new
// checkpoint newID of the workspace key ("" for the age policy).
func (s *ckStore) policy(now time.Time, key, newID string) retention.Policy {
	return retention.Policy{MaxAge: s.cfg.MaxAge, PerWorkspace: s.cfg.MaxPerWorkspace, VersionsPerWS: s.cfg.MaxVersionsPerWorkspace,
		VersionMinAge: VersionMinAge, Now: now, NewID: newID, NewWorkspaceKey: key}
}

// retained is what the retention policies see of refs (in the same order).
func (s *ckStore) retained(refs []ckRef) []retention.Stored {
	out := make([]retention.Stored, len(refs))
	for i, r := range refs {
		k := retention.Manual
		switch {
		case r.isVersion():
			k = retention.Version
		case r.meta.Reason != CheckpointManual:
			k = retention.Automatic
		}
		out[i] = retention.Stored{Workspace: r.key, ID: r.meta.ID, Created: r.meta.Created, Kind: k, Held: s.isBusy(r.meta.ID)}
	}
	return out
}

// removeWhere removes the checkpoints of refs that drop selects. It
// returns the others, with those whose removal failed, and whether any
// was removed.
func (s *ckStore) removeWhere(refs []ckRef, drop func(ckRef) bool) ([]ckRef, bool) {
	keep := refs[:0:0]
	removed := false
	for _, r := range refs {
		if drop(r) && s.remove(r.key, r.meta.ID) == nil {
			removed = true
			continue
		}
		keep = append(keep, r)
	}
	return keep, removed
}

// rawManifest decodes r's manifest without validating its paths (what
// collection and the byte plan need are the names of its objects). ok is
// false when it cannot be read or decoded: it may then name anything.
func (s *ckStore) rawManifest(r ckRef) (*ckManifest, bool) {
	dfd, err := unix.Openat(s.wsfd, r.key, fdio.DirPath|fdio.Common, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(dfd)
	m, err := s.decodeManifest(dfd, r.meta)
	return m, err == nil
}

// enforce applies the count and byte limits after the checkpoint newID of
// ws was committed. It plans first (the retention policies) and removes
// after: automatic checkpoints go before manual ones, the oldest first in
// each; a checkpoint a restore reads never goes, nor a per-file version
// younger than VersionMinAge or one whose write is still running; a new
// per-file version evicts only other versions, by count and by bytes. If
// the new checkpoint does not fit even with every planned removal,
// nothing else is removed: the new one alone goes and the create fails.
//
// No checkpoint, of whatever kind, evicts a version younger than
// VersionMinAge: a sync that overwrites more files than the bound within
// minutes, or a manual or automatic checkpoint taken during one, is
// refused (CHECKPOINT_LIMIT) rather than lose what the writes replaced. A
// per-file version makes room for its bytes only by evicting other
// versions: what an unconditional WebDAV write replaced never costs an
// operator's checkpoint, manual or automatic.
func (s *ckStore) enforce(f *Store, ws davfs.Workspace, newID string) error {
	s.gc.Lock()
	defer s.gc.Unlock()
	key := ckWorkspaceKey(ws)
	refs, err := s.allMetas()
	unread := errors.Is(err, errCkUnread) // plan on what can be read; free nothing
	if err != nil && !unread {
		return errStore(err)
	}
	cs := s.retained(refs)
	retention.SortForEviction(cs)
	refs = sortLike(refs, cs)
	p := s.policy(f.now(), key, newID)
	drop, refuse := p.ByCount(cs)
	if refuse {
		s.remove(key, newID)
		s.collect(nil)
		return errCheckpointLimit(fmt.Sprintf("keeping it would prune a version younger than %v (services.checkpoints.maxVersionsPerWorkspace, %d, is reached)", VersionMinAge, s.cfg.MaxVersionsPerWorkspace))
	}
	maxBytes, reserve, volume := s.byteLimit()
	if s.total.Load() > maxBytes {
		// Over the byte limit: plan further removals on reference counts
		// over what the count limit keeps.
		p.MaxBytes = maxBytes
		objects, sizes, unknown := s.referencedBytes(refs, drop)
		if !p.ByBytes(cs, drop, objects, sizes, unread || unknown) {
			return s.refuseNew(err, key, newID, volume, reserve)
		}
	}
	if !slices.Contains(drop, true) {
		return nil
	}
	dropped := map[*ckMeta]bool{}
	for i, r := range refs {
		dropped[r.meta] = drop[i]
	}
	keep, _ := s.removeWhere(refs, func(r ckRef) bool { return dropped[r.meta] })
	if unread {
		keep = nil // read again: frees nothing while still incomplete
	}
	return s.collect(keep)
}

// sortLike returns refs in the order of cs, which retained(refs) made and
// retention sorted (workspace key and ID identify a checkpoint).
func sortLike(refs []ckRef, cs []retention.Stored) []ckRef {
	by := make(map[string]ckRef, len(refs))
	for _, r := range refs {
		by[r.key+"/"+r.meta.ID] = r
	}
	out := make([]ckRef, len(cs))
	for i, c := range cs {
		out[i] = by[c.Workspace+"/"+c.ID]
	}
	return out
}

// referencedBytes reads the manifests of the refs not in drop (parallel
// to refs): which objects or packs each references (objects, parallel to
// refs; none for a dropped one) and what each occupies (sizes). unknown:
// a manifest could not be read, so what it holds, and so what can be
// freed, is unknown.
func (s *ckStore) referencedBytes(refs []ckRef, drop []bool) (objects [][]string, sizes map[string]int64, unknown bool) {
	objects = make([][]string, len(refs))
	sizes = map[string]int64{}
	for i, r := range refs {
		if drop[i] {
			continue
		}
		m, ok := s.rawManifest(r)
		if !ok {
			unknown = true // what it holds, and so what can be freed, is unknown
			continue
		}
		seen := map[string]bool{}
		for _, e := range m.Entries {
			k, size := e.Hash, e.Size
			if known, ok := sizes[k]; ok && e.Pack == "" {
				size = known
			} else if e.Pack == "" {
				size = s.objectOccupied(k, size)
			}
			if e.Pack != "" {
				k = "pack:" + e.Pack
				if known, ok := sizes[k]; ok {
					size = known
				} else {
					var st unix.Stat_t
					if checkpointIDRE.MatchString(e.Pack) && fdio.Fstatat(s.packfd, e.Pack+".pack", &st) == nil {
						size = occupied(&st)
					}
				}
			}
			if k != "" && !seen[k] {
				seen[k] = true
				sizes[k] = size
				objects[i] = append(objects[i], k)
			}
		}
	}
	return objects, sizes, unknown
}

// refuseNew removes the new checkpoint newID of key, and what only it
// stored, and says why it cannot fit; nothing else goes. err is what
// listing the store returned.
func (s *ckStore) refuseNew(err error, key, newID string, volume bool, reserve int64) error {
	s.remove(key, newID)
	s.collect(nil)
	if u := (*ckUnread)(nil); errors.As(err, &u) {
		which := "named in the server log" // another workspace's is not named here
		if u.key == key && u.id != "" {
			which = fmt.Sprintf("%q", u.id)
		}
		return newErr(davfs.CodeResourceExhausted, davfs.ReasonCheckpointLimit, nil, "the store is over services.checkpoints.maxTotalBytes and not fully readable (a checkpoint cannot be read), so nothing can be pruned; retry, or delete the checkpoint %s", which)
	}
	if volume {
		return errVolumeFull(reserve)
	}
	return errCheckpointLimit(fmt.Sprintf("it is larger than services.checkpoints.maxTotalBytes, even without the checkpoints that could be pruned (a per-file version younger than %v, or one whose write is still running, is never pruned)", VersionMinAge))
}
