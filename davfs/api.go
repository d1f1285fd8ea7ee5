package davfs

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Config is what davfs needs from the sidecar's services.project section.
// Zero values take the PRD defaults (see Defaults).
type Config struct {
	ProjectsRoot        string   // projectsRootDir
	CodexHome           string   // codexHomeDir
	MaxEditableFileSize int64    // maxEditableFileSize, default 1 MiB
	MaxUploadSize       int64    // maxUploadSize (WebDAV PUT), default 100 MiB
	MaxPageSize         int      // maxPageSize, default 500
	DefaultPageSize     int      // default 100
	MaxPathLength       int      // maxPathLength in bytes, default 4096
	MaxPathDepth        int      // maxPathDepth in segments, default 64
	DeniedNames         []string // deniedDirectories; ".git" is always added

	// Initializer runs after CreateProject's mkdir (the sidecar passes one
	// that runs git init). Nil means no initializer.
	Initializer ProjectInitializer
	// Logger receives operational detail (never content). Nil: hclog.NewNullLogger().
	Logger hclog.Logger
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
	// DisableOpenat2 forces the per-segment O_NOFOLLOW fallback walk (tests).
	DisableOpenat2 bool
}

// ProjectInitializer initialises a freshly created, empty project directory.
// dir is the absolute host path of that directory: it is only ever handed to
// the initializer (git init), never logged or returned to a client. If it
// returns an error, CreateProject removes exactly what it created.
//
// Limit: this is the one place davfs hands out a path string (git has no
// fd interface). CreateProject runs it under the mutation lock and checks
// afterwards that the project is still the directory it made; a process
// with the volume's UID could still race git itself, which gains it nothing
// it could not do directly.
type ProjectInitializer func(ctx context.Context, dir string) error

// Scope selects the namespace of a Workspace.
type Scope int

const (
	ScopeUnspecified Scope = iota
	ScopeProject
	ScopeGlobal
)

// Workspace is a WorkspaceRef: a Project by name, or the Global virtual root.
type Workspace struct {
	Scope   Scope
	Project string // required for ScopeProject, empty for ScopeGlobal
}

// EntryType is the kind of an Entry.
type EntryType int

const (
	TypeUnspecified EntryType = iota
	TypeFile
	TypeDirectory
)

// NonEditableReason says why a file's content is not returned.
type NonEditableReason int

const (
	EditableOK NonEditableReason = iota
	NotEditableTooLarge
	NotEditableBinary
	NotEditableNotUTF8
	NotEditableMultipleLinks
	NotEditableUnknown // listings classify by stat only
)

// Entry is a file or directory inside a workspace.
type Entry struct {
	Name    string
	Path    string // relative to the workspace root, "/"-separated, "" for the root
	Type    EntryType
	Size    int64 // 0 for directories
	ModTime time.Time
	// ChangeTime is the status change time (ctime): unlike ModTime, no
	// client can set it, so it tells when the entry last changed.
	ChangeTime time.Time
	Revision   string // opaque; equals the WebDAV ETag without quotes
	Editable   bool
	Reason     NonEditableReason
	// MultipleLinks: a regular file with more than one hard link. Its
	// content is never read, written, copied or replaced by any surface
	// (links.go); Reason is NotEditableMultipleLinks and Revision is
	// stat-only. Its name may be deleted or renamed.
	MultipleLinks bool
}

// Project is a first-level directory under the projects root.
type Project struct {
	Name           string
	ModTime        time.Time
	GitInitialized bool
	Revision       string
}

// File is the result of ReadFile. Content is set only when Entry.Editable.
type File struct {
	Entry   Entry
	Content []byte
}

// Page is one page of a directory listing.
type Page struct {
	Entries           []Entry
	NextCursor        string // "" on the last page
	DirectoryRevision string
}

// ProjectPage is one page of ListProjects.
type ProjectPage struct {
	Projects   []Project
	NextCursor string
}
