package rpc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/internal/rpcmeta"
)

// Observer records one finished call (metrics). Optional.
type Observer interface {
	Observe(action, code string, reason davfs.Reason, d time.Duration)
}

type callInfoKey struct{}

// CallInfo is what the interceptor learned about a call from its metadata.
type CallInfo struct {
	RequestID string
	Operator  string
}

// Interceptor returns the unary server interceptor of the WorkspaceService:
// it takes x-request-id (generating one if missing or malformed) and
// x-operator from the metadata, echoes x-request-id back as header metadata,
// refuses a call whose deadline already passed, recovers panics, maps errors
// to statuses, and writes one log line and one metrics observation per call.
// Log lines never hold file content.
func Interceptor(log hclog.Logger, obs Observer) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		start := time.Now()
		ci := incomingCall(ctx)
		ctx = context.WithValue(ctx, callInfoKey{}, ci)
		_ = grpc.SetHeader(ctx, metadata.Pairs(rpcmeta.RequestID, ci.RequestID))
		action := path.Base(info.FullMethod)
		if !strings.HasPrefix(info.FullMethod, "/workspace.v1.WorkspaceService/") && !strings.HasPrefix(info.FullMethod, "/workspace.v1.CheckpointService/") {
			// Health checks and other infrastructure: no metrics, debug log.
			resp, err = handler(ctx, req)
			log.Debug("rpc", "method", info.FullMethod, "request_id", ci.RequestID, "code", status.Code(err).String())
			return resp, err
		}

		// The log fields are built only for a line that is written (and
		// for a panic).
		fields := func() []any {
			f := callFields(info.FullMethod, ci, req)
			if dl, ok := ctx.Deadline(); ok {
				f = append(f, "deadline_ms", time.Until(dl).Milliseconds())
			}
			return f
		}

		cause := guard(log, fields, func() (err error) {
			if err = ctx.Err(); err != nil {
				return err
			}
			resp, err = handler(ctx, req)
			return err
		})

		st, reason := toStatus(cause)
		// Like the WebDAV handler: a successful read is a debug line (the
		// gateway's access log has it already).
		record(log, obs, action, cause == nil && readRPCs[action], false, fields, st, reason, cause, start)
		if cause != nil {
			return nil, st.Err()
		}
		return resp, nil
	}
}

// readRPCs change nothing; their successes log at debug.
var readRPCs = map[string]bool{"ListProjects": true, "ListEntries": true, "GetFile": true, "ListCheckpoints": true, "CompareCheckpoint": true}

// errorDetail is the full error chain for logs. davfs promises its causes hold
// no file content.
func errorDetail(err error) string {
	var de *davfs.Error
	if errors.As(err, &de) && de.Err != nil {
		return de.Message + ": " + de.Err.Error()
	}
	return err.Error()
}

// callFields are a call's log fields: its method, request ID and operator,
// and the workspace and paths of its request (never its content).
func callFields(method string, ci CallInfo, req any) []any {
	f := []any{"method", method, "request_id", ci.RequestID, "operator", ci.Operator}
	if r, ok := req.(interface {
		GetWorkspace() *workspacev1.WorkspaceRef
	}); ok && r.GetWorkspace() != nil {
		f = append(f, "scope", r.GetWorkspace().GetScope().String(), "project", r.GetWorkspace().GetProjectName())
	}
	switch r := req.(type) {
	case *workspacev1.CreateProjectRequest, *workspacev1.DeleteProjectRequest:
		f = append(f, "project", r.(interface{ GetName() string }).GetName())
	case *workspacev1.CreateEntryRequest:
		p := r.GetName()
		if r.GetParentPath() != "" {
			p = r.GetParentPath() + "/" + p
		}
		f = append(f, "path", p)
	case *workspacev1.MoveEntryRequest:
		f = append(f, "path", r.GetSourcePath(), "destination_path", r.GetDestinationPath())
	case interface{ GetPath() string }:
		f = append(f, "path", r.GetPath())
	}
	// A delete that goes without its automatic checkpoint cannot be
	// undone: the sidecar's own log says so, as the gateway's audit does.
	if r, ok := req.(interface{ GetSkipCheckpoint() bool }); ok && r.GetSkipCheckpoint() {
		f = append(f, "skip_checkpoint", true)
	}
	return f
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// validID accepts a caller's request ID only if it is short and plain, so it
// cannot forge log structure.
var validID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`).MatchString

// incomingCall is the CallInfo in a call's metadata: its request ID (a new
// one when missing or malformed) and its operator (at most 256 bytes).
func incomingCall(ctx context.Context) CallInfo {
	md, _ := metadata.FromIncomingContext(ctx)
	ci := CallInfo{RequestID: first(md, rpcmeta.RequestID), Operator: first(md, rpcmeta.Operator)}
	if !validID(ci.RequestID) {
		ci.RequestID = newRequestID()
	}
	if len(ci.Operator) > 256 {
		ci.Operator = ci.Operator[:256]
	}
	return ci
}

// guard runs fn; a panic becomes its error, logged with fields and the stack.
func guard(log hclog.Logger, fields func() []any, fn func() error) (cause error) {
	defer func() {
		if p := recover(); p != nil {
			cause = fmt.Errorf("panic: %v", p)
			log.Error("panic in handler", append(fields(), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))...)
		}
	}()
	return fn()
}

// record makes a call's one metrics observation (as OK when asOK) and writes
// its one log line: its fields, code and duration and, for a failure, the
// reason and the error (an internal error's wrapped cause goes to the log
// only; the client sees the status message). A quiet call logs at debug;
// otherwise an internal error at error, anything else at info. The fields
// are built only for a line that is written.
func record(log hclog.Logger, obs Observer, action string, quiet, asOK bool, fields func() []any, st *status.Status, reason davfs.Reason, cause error, start time.Time) {
	d := time.Since(start)
	code := st.Code().String()
	if asOK {
		code, reason = codes.OK.String(), ""
	}
	if obs != nil {
		obs.Observe(action, code, reason, d)
	}
	level := hclog.Info
	switch {
	case quiet:
		level = hclog.Debug
	case st.Code() == codes.Internal:
		level = hclog.Error
	}
	if level < log.GetLevel() {
		return
	}
	f := append(fields(), "code", st.Code().String(), "duration", d.String())
	switch {
	case cause == nil:
	case st.Code() == codes.Internal:
		f = append(f, "reason", string(reason), "error", errorDetail(cause))
	default:
		f = append(f, "reason", string(reason), "error", st.Message())
	}
	log.Log(level, "rpc", f...)
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// StreamInterceptor is Interceptor's counterpart for streaming calls (the
// WatchService's Watch): the same request ID and operator handling (the ID
// is echoed as header metadata and reaches the handler's context), a
// recovered panic ends the stream with Internal instead of the process,
// and one log line and one metrics observation per stream when it ends.
// A stream ended by its client (canceled) is a normal end: observed as OK,
// logged at debug. Log lines never hold file content or names beyond the
// request's workspace.
func StreamInterceptor(log hclog.Logger, obs Observer) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		start := time.Now()
		ctx := ss.Context()
		ci := incomingCall(ctx)
		ws := &infoStream{ServerStream: ss, ctx: context.WithValue(ctx, callInfoKey{}, ci)}
		_ = ss.SetHeader(metadata.Pairs(rpcmeta.RequestID, ci.RequestID))
		action := path.Base(info.FullMethod)
		ours := strings.HasPrefix(info.FullMethod, "/workspace.v1.")
		fields := func() []any { return callFields(info.FullMethod, ci, ws.req) }

		cause := guard(log, fields, func() error { return handler(srv, ws) })

		st, reason := toStatus(cause)
		clientGone := st.Code() == codes.Canceled && ctx.Err() != nil
		// st.Err() is nil for a stream that ended without an error.
		if !ours {
			log.Debug("rpc", "method", info.FullMethod, "request_id", ci.RequestID, "code", st.Code().String())
			return st.Err()
		}
		record(log, obs, action, cause == nil || clientGone, clientGone, fields, st, reason, cause, start)
		return st.Err()
	}
}

// infoStream carries the CallInfo in its context and keeps the first
// request message for the log line.
type infoStream struct {
	grpc.ServerStream
	ctx context.Context
	req any
}

func (s *infoStream) Context() context.Context { return s.ctx }

func (s *infoStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil && s.req == nil {
		s.req = m
	}
	return err
}
