// Package rpcmeta names the gRPC metadata keys the gateway and the sidecar
// exchange on every WorkspaceService and CheckpointService call. The
// gateway sets the request keys from its own authenticated request (it
// never copies a client's); the sidecar reads them for its logs and
// answers with the request ID and, on a failed delete, the automatic
// checkpoint it took first.
package rpcmeta

const (
	// RequestID carries the gateway request's ID to the sidecar, and the
	// sidecar returns it (or one it generated) in the response header.
	RequestID = "x-request-id"
	// Operator names the authenticated operator, for the sidecar's logs.
	Operator = "x-operator"
	// AutoCheckpoint is the trailer naming the automatic checkpoint a
	// delete took before it failed (on success the response carries it),
	// so the gateway audits that checkpoint too.
	AutoCheckpoint = "x-auto-checkpoint-id"
)
