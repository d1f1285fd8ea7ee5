package audit

import (
	"context"
	"time"
)

// Mutation is what the REST path (mgmt) and the WebDAV path (the gateway's
// davproxy hook) know of one mutation attempt. Records turns it into the
// records to write, so both paths build them the one way.
type Mutation struct {
	Start     time.Time
	Duration  time.Duration
	RequestID string
	Operator  string
	AgentID   string
	Scope     string // WorkspaceScope: "PROJECT", "GLOBAL" or ""
	Project   string
	Action    string
	Source    string
	Dest      string
	// Code is the gRPC code's name of the outcome; Reason its errtable
	// reason, when there is one.
	Code   string
	Reason string
	// Failed marks the record ResultError.
	Failed     bool
	HTTPStatus int // WebDAV only
	// CheckpointID: see Record.CheckpointID.
	CheckpointID   string
	Unconditional  bool
	SkipCheckpoint bool
	// Autos are the automatic checkpoints taken before the mutation, in
	// order; each gets its own create_checkpoint record first, and the
	// mutation's record names the last.
	Autos []Auto
}

// Auto is one automatic checkpoint a mutation took first.
type Auto struct {
	ID     string
	Reason string // before_delete, before_project_delete or before_restore
	Path   string // what it was taken of ("" the whole workspace)
}

// Records are m's records in the order they are written: one
// AutomaticCheckpoint record for each of m.Autos with an ID, then m's own.
// Paths are redacted by Logger.Record, the one place that does it.
func (m Mutation) Records() []Record {
	rec := Record{
		Time:            m.Start,
		RequestID:       m.RequestID,
		Operator:        m.Operator,
		AgentID:         m.AgentID,
		WorkspaceScope:  m.Scope,
		ProjectName:     m.Project,
		Action:          m.Action,
		SourcePath:      m.Source,
		DestinationPath: m.Dest,
		GRPCCode:        m.Code,
		Reason:          m.Reason,
		HTTPStatus:      m.HTTPStatus,
		DurationMS:      Duration(m.Duration),
		Result:          ResultOK,
		Unconditional:   m.Unconditional,
		SkipCheckpoint:  m.SkipCheckpoint,
		CheckpointID:    m.CheckpointID,
	}
	if m.Failed {
		rec.Result = ResultError
	}
	var out []Record
	for _, a := range m.Autos {
		if a.ID == "" {
			continue
		}
		// The checkpoint came first, and succeeded whatever the
		// mutation's result.
		out = append(out, AutomaticCheckpoint(rec, a.ID, a.Reason, a.Path))
		rec.AutoCheckpointID = a.ID
	}
	return append(out, rec)
}

// Mutation writes m's records (see Mutation.Records).
func (l *Logger) Mutation(ctx context.Context, m Mutation) {
	for _, r := range m.Records() {
		l.Record(ctx, r)
	}
}
