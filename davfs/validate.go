package davfs

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/agentworkspace/files/davfs/internal/fdio"
)

// tempPrefix starts the name of every temp file davfs writes. Names with it
// are hidden from listings, refused in requests and swept when stale.
const tempPrefix = fdio.TempPrefix

// nameMax is the longest single segment Linux file systems accept (NAME_MAX).
const nameMax = 255

// Global namespace names: the only two children of the Global virtual root.
const (
	GlobalSkills = "skills"
	GlobalAgents = "AGENTS.md"
)

var projectNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// splitPath validates a workspace-relative path (PRD §8.1) and returns its
// segments; "" is the workspace root (no segments). It does not consult the
// file system: symlinks are refused during resolution.
func (f *FS) splitPath(p string) ([]string, error) { return f.splitPathBuf(p, nil) }

// splitPathBuf is splitPath putting the segments into dst when they fit
// (a caller's stack array, so that Stat allocates no slice).
func (f *FS) splitPathBuf(p string, dst []string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if len(p) > f.cfg.MaxPathLength {
		return nil, newErr(CodeResourceExhausted, ReasonPathTooLong, nil,
			"path is longer than %d bytes", f.cfg.MaxPathLength)
	}
	if !utf8.ValidString(p) {
		return nil, newErr(CodeInvalidArgument, ReasonInvalidPath, nil, "invalid path: not valid UTF-8")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return nil, newErr(CodeInvalidArgument, ReasonInvalidPath, nil, "invalid path: contains NUL")
	}
	if p[0] == '/' {
		return nil, errInvalidPath(p, "absolute paths are not allowed")
	}
	n := strings.Count(p, "/") + 1
	if n > f.cfg.MaxPathDepth {
		return nil, newErr(CodeResourceExhausted, ReasonPathTooDeep, nil,
			"path is deeper than %d segments", f.cfg.MaxPathDepth)
	}
	var segs []string
	if n <= cap(dst) {
		segs = dst[:0:n]
	} else {
		segs = make([]string, 0, n)
	}
	for s := range strings.SplitSeq(p, "/") {
		segs = append(segs, s)
	}
	for _, s := range segs {
		if err := f.checkSegment(p, s); err != nil {
			return nil, err
		}
	}
	return segs, nil
}

// checkSegment validates one segment of the request path p.
func (f *FS) checkSegment(p, s string) error {
	switch {
	case s == "":
		return errInvalidPath(p, "empty segment")
	case s == "." || s == "..":
		return errInvalidPath(p, `"." and ".." are not allowed`)
	case len(s) > nameMax:
		return newErr(CodeResourceExhausted, ReasonPathTooLong, nil, "a segment of %q is longer than %d bytes", p, nameMax)
	case f.denied(s):
		return newErr(CodePermissionDenied, ReasonDenylisted, nil, "%q contains the denied name %q", p, s)
	case strings.HasPrefix(s, tempPrefix):
		return errInvalidPath(p, "reserved name")
	}
	return nil
}

// checkName validates a single new entry name (CreateEntry).
func (f *FS) checkName(name string) error {
	switch {
	case name == "":
		return newErr(CodeInvalidArgument, ReasonInvalidName, nil, "name is empty")
	case !utf8.ValidString(name):
		return newErr(CodeInvalidArgument, ReasonInvalidName, nil, "name is not valid UTF-8")
	case strings.IndexByte(name, 0) >= 0:
		return newErr(CodeInvalidArgument, ReasonInvalidName, nil, "name contains NUL")
	case strings.IndexByte(name, '/') >= 0:
		return newErr(CodeInvalidArgument, ReasonInvalidName, nil, "name %q contains '/'", name)
	case name == "." || name == "..":
		return newErr(CodeInvalidArgument, ReasonInvalidName, nil, "name %q is not allowed", name)
	case len(name) > nameMax:
		return newErr(CodeResourceExhausted, ReasonPathTooLong, nil, "name is longer than %d bytes", nameMax)
	case f.denied(name):
		return newErr(CodePermissionDenied, ReasonDenylisted, nil, "name %q is denied", name)
	case strings.HasPrefix(name, tempPrefix):
		return newErr(CodeInvalidArgument, ReasonInvalidName, nil, "name %q is reserved", name)
	}
	return nil
}

// visibleName reports whether a name read from a directory listing may be
// shown: names from the disk are validated like names from a request.
func (f *FS) visibleName(name string) bool {
	return name != "" && name != "." && name != ".." && len(name) <= nameMax &&
		utf8.ValidString(name) && strings.IndexByte(name, 0) < 0 &&
		strings.IndexByte(name, '/') < 0 &&
		!f.denied(name) && !strings.HasPrefix(name, tempPrefix)
}

func (f *FS) denied(name string) bool {
	_, ok := f.deny[name]
	return ok
}

// checkProjectName validates the name of a new project (PRD §7.3).
func (f *FS) checkProjectName(name string) error {
	if !projectNameRE.MatchString(name) {
		return newErr(CodeInvalidArgument, ReasonInvalidName, nil,
			"project name must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
	}
	if f.denied(name) {
		return newErr(CodePermissionDenied, ReasonDenylisted, nil, "project name %q is denied", name)
	}
	if strings.HasPrefix(name, tempPrefix) {
		return newErr(CodeInvalidArgument, ReasonInvalidName, nil, "project name %q is reserved", name)
	}
	return nil
}

// checkProjectRef validates the project of a PROJECT workspace reference.
// Existing projects need not match the creation regex (PRD §5.2: every
// existing first-level directory is a project); they must be a valid,
// visible single segment.
func (f *FS) checkProjectRef(name string) error {
	if name == "" {
		return newErr(CodeInvalidArgument, ReasonInvalidWorkspace, nil, "project_name is required for a PROJECT workspace")
	}
	if f.denied(name) {
		return newErr(CodePermissionDenied, ReasonDenylisted, nil, "project %q is denied", name)
	}
	if !f.visibleName(name) {
		return newErr(CodeInvalidArgument, ReasonInvalidWorkspace, nil, "invalid project name %q", name)
	}
	return nil
}

// checkGlobal enforces the Global allowlist on a validated path: only
// "skills", "skills/**" and "AGENTS.md" (exact case) are reachable.
func checkGlobal(p string, segs []string) error {
	if len(segs) == 0 {
		return nil
	}
	if segs[0] == GlobalSkills || (segs[0] == GlobalAgents && len(segs) == 1) {
		return nil
	}
	return newErr(CodePermissionDenied, ReasonOutsideGlobal, nil,
		"%q is outside the Global namespace (only skills/ and AGENTS.md)", p)
}
