package davfs

// Precondition is what a WebDAV request demands of one target when a
// write commits.
type Precondition struct {
	IfMatch     string // revision (unquoted) the target must still have; "" = none
	IfNoneMatch bool   // If-None-Match: * — the target must not exist

	// Required refuses (FailedPrecondition, PRECONDITION_REQUIRED) a write
	// that would replace or remove an existing resource without IfMatch.
	// A write that creates is then checked as IfNoneMatch, so it can never
	// replace what appeared meanwhile.
	Required bool

	// Keep, set to the request's method, lets a Required write go ahead
	// without IfMatch once what it replaces or removes is kept as a
	// per-file version (davfs/checkpoint/version.go; webdav.unconditionalWrites:
	// keep). With checkpoints off such a write is still refused, saying
	// keeping is off. A create keeps nothing.
	Keep string

	// Replacing marks a RemoveAll that makes room for a COPY or MOVE
	// destination (Overwrite: T): a file with more than one hard link is
	// never replaced (PermissionDenied, MULTIPLE_LINKS).
	Replacing bool
}
