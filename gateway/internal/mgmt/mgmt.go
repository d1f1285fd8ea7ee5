// Package mgmt implements the gateway's WorkspaceManagementService (PRD
// §10.1): ListAgents from static config, and every other call routed by
// agent_id to that agent's sidecar WorkspaceService over gRPC.
//
// Guarantees: ListAgents never contacts a sidecar and never shows an endpoint;
// each sidecar call goes over mutual TLS (the gateway's client certificate;
// the sidecar's certificate must name its agent, see internal/pki) and
// carries the configured timeout, the request ID and the authenticated
// operator as metadata (x-request-id, x-operator), which the sidecar
// believes because of that certificate; every error returned is re-created from code, reason and the
// sidecar's safe message, so transport text (which may name an endpoint)
// never reaches a client; every mutation is audited and every call counted.
package mgmt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/agentworkspace/files/contracts/errtable"
	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/audit"
	"github.com/agentworkspace/files/gateway/internal/auth"
	"github.com/agentworkspace/files/gateway/internal/config"
	"github.com/agentworkspace/files/gateway/internal/metrics"
	"github.com/agentworkspace/files/gateway/internal/requestid"
	"github.com/agentworkspace/files/internal/pki"
	"github.com/agentworkspace/files/internal/rpcmeta"
)

type agent struct {
	id       string
	provider string
	timeout  time.Duration
	// long is the deadline of checkpoint calls (call.long).
	long   time.Duration
	conn   *grpc.ClientConn
	client workspacev1.WorkspaceServiceClient
	// dav is the sidecar's WebDAV base URL (nil: none).
	dav *url.URL
	// target is the gRPC address conn was made for.
	target string
	// discovered: found through the Kubernetes API (registry.go);
	// unreachable: discovered with no ready address now.
	discovered, unreachable bool
}

// Service is the in-process WorkspaceManagementService.
type Service struct {
	workspacev1.UnimplementedWorkspaceManagementServiceServer

	// mu guards agents and list, which discovery changes at run time
	// (registry.go). An *agent is never changed once published: a new one
	// replaces it.
	mu sync.RWMutex
	// agents by id; list is what ListAgents shows, sorted by agent_id.
	agents map[string]*agent
	list   []*workspacev1.Agent
	// clashes are the discovered ids hidden by a static agent (logged
	// once each).
	clashes      map[string]bool
	defaultAgent string
	audit        *audit.Logger
	metrics      *metrics.Metrics
	log          hclog.Logger
	now          func() time.Time
	tls          *pki.Source
	dialOptions  []grpc.DialOption
}

// Deps are the Service's collaborators.
type Deps struct {
	Audit   *audit.Logger
	Metrics *metrics.Metrics
	Logger  hclog.Logger
	Now     func() time.Time
	// DialOptions are added to every sidecar client (tests).
	DialOptions []grpc.DialOption
	// TLS is agentRuntime.sidecarTLS loaded (required when an agent has a
	// sidecar).
	TLS *pki.Source
}

// sidecarWindow is the flow-control window of the sidecar connections:
// larger than a message of a whole editable file (1 MiB by default).
const sidecarWindow = 4 << 20

// New creates one lazily-connecting gRPC client per agent with a sidecar.
// grpc.NewClient does not dial, so a sidecar that is down at start only
// affects its own calls.
func New(cfg config.AgentRuntime, d Deps) (*Service, error) {
	s := &Service{agents: map[string]*agent{}, clashes: map[string]bool{}, defaultAgent: cfg.DefaultAgent, audit: d.Audit, metrics: d.Metrics,
		log: cmp.Or(d.Logger, hclog.NewNullLogger()), now: d.Now, tls: d.TLS, dialOptions: d.DialOptions}
	if s.now == nil {
		s.now = time.Now
	}
	for _, id := range slices.Sorted(maps.Keys(cfg.Agents)) {
		a := cfg.Agents[id]
		state := workspacev1.AgentState_AGENT_STATE_READY
		if a.Sidecar == nil {
			state = workspacev1.AgentState_AGENT_STATE_NO_SIDECAR
		}
		s.list = append(s.list, &workspacev1.Agent{
			AgentId:                  id,
			Provider:                 a.Provider,
			ProjectManagementEnabled: a.Sidecar != nil,
			IsDefault:                id == cfg.DefaultAgent,
			State:                    state,
			Source:                   workspacev1.AgentSource_AGENT_SOURCE_STATIC,
		})
		ag := &agent{id: id, provider: a.Provider}
		if a.Sidecar != nil {
			var err error
			if ag, err = s.dial(id, a.Provider, a.Sidecar.Endpoint, a.Sidecar); err != nil {
				s.Close()
				return nil, err
			}
			if a.Sidecar.DavEndpoint != "" {
				ag.dav, _ = url.Parse(a.Sidecar.DavEndpoint) // Validate refused a bad one
			}
		}
		s.agents[id] = ag
	}
	return s, nil
}

// dial makes the lazily-connecting client of agent id's sidecar at target:
// mutual TLS, and the sidecar must present a certificate naming id
// (pki.SidecarServerName), whatever address it was reached at.
func (s *Service) dial(id, provider, target string, sc *config.Sidecar) (*agent, error) {
	if s.tls == nil {
		return nil, fmt.Errorf("agentRuntime.sidecarTLS: required for agent %s's sidecar", id)
	}
	opts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(credentials.NewTLS(s.tls.SidecarClientConfig(id, pki.ProtoGRPC))),
		// A restarted sidecar must be usable again within seconds:
		// grpc-go's default reconnect backoff grows to 120 s, during
		// which every call would fail fast with Unavailable.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: 2 * time.Second,
		}),
		// Fixed flow-control windows (as the sidecar's): no PING
		// round trip for bandwidth estimation after each response.
		grpc.WithInitialWindowSize(sidecarWindow),
		grpc.WithInitialConnWindowSize(2 * sidecarWindow),
		grpc.WithChainUnaryInterceptor(refuseInvalidUTF8),
	}, s.dialOptions...)
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		// grpc's error quotes the target; the key names it well enough.
		return nil, fmt.Errorf("agentRuntime.agents.%s.sidecar.endpoint: not a usable gRPC target", id)
	}
	return &agent{id: id, provider: provider, conn: conn, client: workspacev1.NewWorkspaceServiceClient(conn), target: target,
		timeout: sc.CallTimeout(), long: sc.CheckpointCallTimeout()}, nil
}

// Close closes every sidecar connection.
func (s *Service) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.agents {
		if a.conn != nil {
			_ = a.conn.Close()
		}
	}
}

// ListAgents returns one page of the configured agents sorted by agent_id
// (agentpage.go). It never contacts a sidecar.
func (s *Service) ListAgents(ctx context.Context, req *workspacev1.ListAgentsRequest) (*workspacev1.ListAgentsResponse, error) {
	start := s.now()
	if _, err := admin(ctx); err != nil {
		s.observe("list_agents", "", err, start)
		return nil, err
	}
	s.mu.RLock()
	out, err := pageAgents(s.list, req)
	s.mu.RUnlock()
	s.observe("list_agents", "", err, start)
	return out, err
}

// call describes one routed call for metrics and audit.
type call struct {
	action   string
	agentID  string
	mutation bool
	scope    string
	project  string
	source   string
	dest     string
	// checkpoint points at the checkpoint ID of a checkpoint action
	// (audit); the call may set it (a create learns its ID).
	checkpoint *string
	// skipCheckpoint: a delete asked to go without its automatic
	// checkpoint (audited).
	skipCheckpoint bool
	// auto, when set, is filled by the call with the automatic checkpoint
	// the sidecar took before the mutation (its ID from the response), so
	// that it gets its own create_checkpoint record.
	auto *autoCheckpoint
	// long: checkpoint work (sidecar.checkpointTimeout): the call takes,
	// restores, compares or removes checkpoints, or takes one first.
	long bool
}

// autoID is the automatic checkpoint's ID: from the response, or, when the
// delete or restore failed after taking it, from the trailer. Anything not
// shaped like a checkpoint ID is dropped (as davproxy does with its header):
// the audit record never carries what the sidecar should not have sent.
func autoID(fromResponse string, tr metadata.MD) string {
	id := fromResponse
	if v := tr.Get(rpcmeta.AutoCheckpoint); id == "" && len(v) == 1 {
		id = v[0]
	}
	if !checkpointIDShape.MatchString(id) {
		return ""
	}
	return id
}

// checkpointIDShape is davfs's checkpoint ID: 24 lowercase hex digits.
var checkpointIDShape = regexp.MustCompile(`^[0-9a-f]{24}$`)

// autoCheckpoint is an automatic checkpoint a mutation took first.
type autoCheckpoint struct {
	reason string // davfs's: before_delete, before_project_delete, before_restore
	id     string // "" when none was taken
	path   string // what it was taken of ("" the whole workspace)
}

func scopeOf(w *workspacev1.WorkspaceRef) (scope, project string) {
	if w == nil {
		return "", ""
	}
	if w.GetScope() == workspacev1.WorkspaceScope_GLOBAL {
		return "GLOBAL", ""
	}
	// PROJECT, or what the sidecar will refuse, by the enum's name.
	return w.GetScope().String(), w.GetProjectName()
}

func admin(ctx context.Context) (auth.Identity, error) {
	id, ok := auth.FromContext(ctx)
	if !ok || id.Operator == "" {
		return auth.Identity{}, Error(codes.Unauthenticated, workspacev1.ErrorReason_UNAUTHENTICATED, "authentication required")
	}
	if !id.Admin() {
		return auth.Identity{}, Error(codes.PermissionDenied, workspacev1.ErrorReason_FORBIDDEN, "admin role required")
	}
	return id, nil
}

// sidecarFor is the agent a call of an authenticated admin goes to, with
// the admin, the agent's metrics label ("unknown" for an agent that is not
// configured) and the client-safe refusal when there is no such agent or
// it has no sidecar (feature names what is disabled then).
func (s *Service) sidecarFor(ctx context.Context, agentID, feature string) (*agent, auth.Identity, string, error) {
	label := agentID
	ag := s.lookup(agentID)
	known := ag != nil
	if !known {
		label = "unknown"
	}
	id, err := admin(ctx)
	switch {
	case err != nil:
	case !known:
		err = Error(codes.NotFound, workspacev1.ErrorReason_AGENT_NOT_FOUND, fmt.Sprintf("agent %q is not configured", truncate(agentID, 64)))
	case ag.unreachable:
		err = Error(codes.Unavailable, workspacev1.ErrorReason_SIDECAR_UNAVAILABLE, fmt.Sprintf("agent %q has no ready sidecar now", agentID))
	case ag.client == nil:
		err = Error(codes.FailedPrecondition, workspacev1.ErrorReason_PROJECT_MANAGEMENT_DISABLED, fmt.Sprintf("agent %q has no workspace sidecar; %s is disabled", agentID, feature))
	}
	return ag, id, label, err
}

// routed routes fn to the agent's sidecar with deadline and metadata, then
// rewraps the error, counts the call and audits mutations. It returns fn's
// response, or none when it did not call fn.
func routed[T any](ctx context.Context, s *Service, c call, fn func(context.Context, workspacev1.WorkspaceServiceClient) (T, error)) (T, error) {
	var out T
	start := s.now()
	ag, id, agentLabel, err := s.sidecarFor(ctx, c.agentID, "project management")
	if err == nil {
		timeout := ag.timeout
		if c.long {
			timeout = ag.long
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		cctx = metadata.NewOutgoingContext(cctx, metadata.Pairs(
			rpcmeta.RequestID, requestid.From(ctx),
			rpcmeta.Operator, id.Operator,
		))
		out, err = fn(cctx, ag.client)
		err = rewrap(cctx, err, c.agentID)
		if c.long && ctx.Err() == nil && abandoned(cctx, err) {
			err = Error(codes.Unavailable, workspacev1.ErrorReason_SIDECAR_UNAVAILABLE, fmt.Sprintf(
				"the checkpoint work did not finish within agentRuntime.agents.%s.sidecar.checkpointTimeout (%v); the sidecar abandons it at that deadline and keeps no checkpoint of it; try again, or raise the timeout", c.agentID, timeout))
		}
		cancel()
	}
	s.observe(c.action, agentLabel, err, start)
	if c.mutation && s.audit != nil {
		s.audit.Mutation(ctx, c.auditMutation(ctx, id, start, s.now().Sub(start), err))
	}
	return out, err
}

// auditMutation is what the audit log gets of the call c by id, started
// at start, that took d and ended in err.
func (c call) auditMutation(ctx context.Context, id auth.Identity, start time.Time, d time.Duration, err error) audit.Mutation {
	st := status.Convert(err)
	m := audit.Mutation{
		Start: start, Duration: d, RequestID: requestid.From(ctx), Operator: id.Operator,
		AgentID: truncate(c.agentID, 64), Scope: c.scope, Project: c.project, Action: c.action,
		Source: c.source, Dest: c.dest, Code: st.Code().String(), Failed: err != nil,
		SkipCheckpoint: c.skipCheckpoint,
	}
	if err != nil {
		m.Reason = errtable.Reason(st)
	}
	if c.checkpoint != nil {
		m.CheckpointID = *c.checkpoint
	}
	if a := c.auto; a != nil {
		m.Autos = []audit.Auto{{ID: a.id, Reason: a.reason, Path: a.path}}
	}
	return m
}

// abandonWindow: the sidecar abandons checkpoint work that would keep its
// result less than a second before its caller's deadline (davfs
// commitMargin) and answers at once; an error of the kind it answers
// then, this close to the deadline, is that abandonment.
const abandonWindow = 2 * time.Second

// abandoned reports whether err, the rewrapped error of a checkpoint call
// with ctx, means its deadline passed or the sidecar abandoned the work at
// its deadline (nothing of it is kept either way).
func abandoned(ctx context.Context, err error) bool {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	d, ok := ctx.Deadline()
	code, reason := status.Code(err), errtable.Reason(status.Convert(err))
	return ok && time.Until(d) < abandonWindow && (code == codes.Unavailable || code == codes.Internal) &&
		(reason == workspacev1.ErrorReason_SIDECAR_UNAVAILABLE.String() || reason == workspacev1.ErrorReason_INTERNAL.String())
}

func (s *Service) observe(action, agentID string, err error, start time.Time) {
	d := s.now().Sub(start)
	code, reason := codes.OK, ""
	if err != nil {
		st := status.Convert(err)
		code, reason = st.Code(), errtable.Reason(st)
	}
	if s.metrics != nil {
		s.metrics.Observe(action, agentID, code, reason, d)
	}
	if err != nil {
		s.log.Debug("call failed", "action", action, "agent_id", agentID, "code", code.String(), "reason", reason)
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func joinPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return path.Join(parent, name)
}

// ListProjects lists the agent's projects.
func (s *Service) ListProjects(ctx context.Context, req *workspacev1.ListAgentProjectsRequest) (*workspacev1.ListProjectsResponse, error) {
	return routed(ctx, s, call{action: "list_projects", agentID: req.GetAgentId()}, func(ctx context.Context, cl workspacev1.WorkspaceServiceClient) (*workspacev1.ListProjectsResponse, error) {
		return cl.ListProjects(ctx, &workspacev1.ListProjectsRequest{PageSize: req.GetPageSize(), Cursor: req.GetCursor()})
	})
}

// CreateProject creates and git-initialises a project.
func (s *Service) CreateProject(ctx context.Context, req *workspacev1.CreateAgentProjectRequest) (*workspacev1.Project, error) {
	return routed(ctx, s, call{action: "create_project", agentID: req.GetAgentId(), mutation: true, scope: "PROJECT", project: req.GetName()},
		func(ctx context.Context, cl workspacev1.WorkspaceServiceClient) (*workspacev1.Project, error) {
			return cl.CreateProject(ctx, &workspacev1.CreateProjectRequest{Name: req.GetName()})
		})
}

// DeleteProject permanently deletes a project.
func (s *Service) DeleteProject(ctx context.Context, req *workspacev1.DeleteAgentProjectRequest) (*workspacev1.DeleteProjectResponse, error) {
	auto := &autoCheckpoint{reason: "before_project_delete"}
	return routed(ctx, s, call{action: "delete_project", agentID: req.GetAgentId(), mutation: true, scope: "PROJECT", project: req.GetName(),
		skipCheckpoint: req.GetSkipCheckpoint(), auto: auto, long: !req.GetSkipCheckpoint()},
		func(ctx context.Context, cl workspacev1.WorkspaceServiceClient) (*workspacev1.DeleteProjectResponse, error) {
			var tr metadata.MD
			out, err := cl.DeleteProject(ctx, &workspacev1.DeleteProjectRequest{Name: req.GetName(), ConfirmName: req.GetConfirmName(),
				SkipCheckpoint: req.GetSkipCheckpoint()}, grpc.Trailer(&tr))
			auto.id = autoID(out.GetAutoCheckpointId(), tr)
			return out, err
		})
}

// ListProjectEntries lists one directory.
func (s *Service) ListProjectEntries(ctx context.Context, req *workspacev1.ListProjectEntriesRequest) (*workspacev1.ListEntriesResponse, error) {
	return routed(ctx, s, call{action: "list_entries", agentID: req.GetAgentId()}, func(ctx context.Context, cl workspacev1.WorkspaceServiceClient) (*workspacev1.ListEntriesResponse, error) {
		return cl.ListEntries(ctx, &workspacev1.ListEntriesRequest{Workspace: req.GetWorkspace(), Path: req.GetPath(), PageSize: req.GetPageSize(), Cursor: req.GetCursor()})
	})
}

// GetProjectFile reads one file's metadata and, when editable, content.
func (s *Service) GetProjectFile(ctx context.Context, req *workspacev1.GetProjectFileRequest) (*workspacev1.GetFileResponse, error) {
	return routed(ctx, s, call{action: "get_file", agentID: req.GetAgentId()}, func(ctx context.Context, cl workspacev1.WorkspaceServiceClient) (*workspacev1.GetFileResponse, error) {
		return cl.GetFile(ctx, &workspacev1.GetFileRequest{Workspace: req.GetWorkspace(), Path: req.GetPath()})
	})
}

// CreateProjectEntry creates an empty file or a directory.
func (s *Service) CreateProjectEntry(ctx context.Context, req *workspacev1.CreateProjectEntryRequest) (*workspacev1.Entry, error) {
	scope, project := scopeOf(req.GetWorkspace())
	return routed(ctx, s, call{action: "create_entry", agentID: req.GetAgentId(), mutation: true, scope: scope, project: project, source: joinPath(req.GetParentPath(), req.GetName())},
		func(ctx context.Context, cl workspacev1.WorkspaceServiceClient) (*workspacev1.Entry, error) {
			return cl.CreateEntry(ctx, &workspacev1.CreateEntryRequest{Workspace: req.GetWorkspace(), ParentPath: req.GetParentPath(), Name: req.GetName(), Type: req.GetType()})
		})
}

// UpdateProjectFile saves text content under an expected revision.
func (s *Service) UpdateProjectFile(ctx context.Context, req *workspacev1.UpdateProjectFileRequest) (*workspacev1.Entry, error) {
	scope, project := scopeOf(req.GetWorkspace())
	return routed(ctx, s, call{action: "update_file", agentID: req.GetAgentId(), mutation: true, scope: scope, project: project, source: req.GetPath()},
		func(ctx context.Context, cl workspacev1.WorkspaceServiceClient) (*workspacev1.Entry, error) {
			return cl.UpdateFile(ctx, &workspacev1.UpdateFileRequest{Workspace: req.GetWorkspace(), Path: req.GetPath(), Content: req.GetContent(), ExpectedRevision: req.GetExpectedRevision()})
		})
}

// MoveProjectEntry moves or renames an entry inside one workspace.
func (s *Service) MoveProjectEntry(ctx context.Context, req *workspacev1.MoveProjectEntryRequest) (*workspacev1.Entry, error) {
	scope, project := scopeOf(req.GetWorkspace())
	return routed(ctx, s, call{action: "move_entry", agentID: req.GetAgentId(), mutation: true, scope: scope, project: project, source: req.GetSourcePath(), dest: req.GetDestinationPath()},
		func(ctx context.Context, cl workspacev1.WorkspaceServiceClient) (*workspacev1.Entry, error) {
			return cl.MoveEntry(ctx, &workspacev1.MoveEntryRequest{Workspace: req.GetWorkspace(), SourcePath: req.GetSourcePath(), DestinationPath: req.GetDestinationPath(), ExpectedRevision: req.GetExpectedRevision()})
		})
}

// DeleteProjectEntry permanently deletes a file or directory.
func (s *Service) DeleteProjectEntry(ctx context.Context, req *workspacev1.DeleteProjectEntryRequest) (*workspacev1.DeleteEntryResponse, error) {
	scope, project := scopeOf(req.GetWorkspace())
	auto := &autoCheckpoint{reason: "before_delete", path: req.GetPath()}
	return routed(ctx, s, call{action: "delete_entry", agentID: req.GetAgentId(), mutation: true, scope: scope, project: project, source: req.GetPath(),
		skipCheckpoint: req.GetSkipCheckpoint(), auto: auto, long: req.GetRecursive() && !req.GetSkipCheckpoint()},
		func(ctx context.Context, cl workspacev1.WorkspaceServiceClient) (*workspacev1.DeleteEntryResponse, error) {
			var tr metadata.MD
			out, err := cl.DeleteEntry(ctx, &workspacev1.DeleteEntryRequest{Workspace: req.GetWorkspace(), Path: req.GetPath(),
				ExpectedRevision: req.GetExpectedRevision(), Recursive: req.GetRecursive(), SkipCheckpoint: req.GetSkipCheckpoint()}, grpc.Trailer(&tr))
			auto.id = autoID(out.GetAutoCheckpointId(), tr)
			return out, err
		})
}
