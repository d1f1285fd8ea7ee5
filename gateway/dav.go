package gateway

import (
	"cmp"
	"crypto/tls"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentworkspace/files/gateway/internal/audit"
	"github.com/agentworkspace/files/gateway/internal/auth"
	"github.com/agentworkspace/files/gateway/internal/davproxy"
	"github.com/agentworkspace/files/gateway/internal/mgmt"
	"github.com/agentworkspace/files/gateway/internal/requestid"
	"github.com/agentworkspace/files/gateway/internal/uploads"
	"github.com/agentworkspace/files/internal/pki"
)

// newDAV builds the WebDAV view (package davproxy) over the configured
// agents' davEndpoints (static, and discovered: mgmt's registry) (mutual TLS, each sidecar's name checked), with the operator and request ID from the gateway's
// auth and request-ID middleware, each agent's sidecar.timeout as its
// header timeout, and every mutation audited with the errtable reason the
// sidecar (or the view itself) gave.
func newDAV(cfg *Config, svc *mgmt.Service, log hclog.Logger, reg prometheus.Registerer, al *audit.Logger, now func() time.Time, slots *uploads.Slots, tlsSrc *pki.Source) (http.Handler, error) {
	timeouts := map[string]time.Duration{}
	for id, a := range cfg.AgentRuntime.Agents {
		timeouts[id] = a.Sidecar.CallTimeout()
	}
	discovered := cfg.AgentRuntime.Discovery.Sidecar().CallTimeout()
	return davproxy.New(davproxy.Options{
		// The registry's current endpoints: static ones, and discovered
		// ones while they have a ready address (registry.go in mgmt).
		Agents:      svc.DavEndpoint,
		Unreachable: svc.Unreachable,
		Timeout: func(id string) time.Duration {
			if t, ok := timeouts[id]; ok {
				return t
			}
			return discovered
		},
		TLS: func(id string) *tls.Config {
			if tlsSrc == nil {
				return nil
			}
			return tlsSrc.SidecarClientConfig(id, pki.ProtoHTTP)
		},
		AgentIDs:          svc.AgentIDs,
		Writable:          cfg.WebDAV.Writable,
		KeepUnconditional: cfg.WebDAV.Writable && cfg.WebDAV.KeepUnconditional(),
		Uploads:           slots,
		Operator: func(r *http.Request) string {
			id, _ := auth.FromContext(r.Context())
			return id.Operator
		},
		RequestID: func(r *http.Request) string { return requestid.From(r.Context()) },
		OnMutation: func(r *http.Request, m davproxy.Mutation) {
			al.Mutation(r.Context(), davAudit(m, now()))
		},
		Logger:     log,
		Registerer: reg,
		Now:        now,
	})
}

// davAudit is what the audit log gets of the WebDAV mutation m, which ended
// at end. Each automatic checkpoint gets its own create_checkpoint record
// first, as over REST (mgmt); a COPY or MOVE removed its destination.
func davAudit(m davproxy.Mutation, end time.Time) audit.Mutation {
	a := audit.Mutation{
		Start: end.Add(-m.Duration), Duration: m.Duration, RequestID: m.RequestID, Operator: m.Operator,
		AgentID: m.AgentID, Scope: m.Scope, Project: m.Project, Action: m.Action,
		Source: m.SourcePath, Dest: m.DestinationPath,
		Code:   m.Code.String(), // errtable.For(m.Reason).Code for failures
		Reason: m.Reason, Failed: m.Status >= 400, HTTPStatus: m.Status,
		Unconditional: m.Unconditional, CheckpointID: m.KeptVersions,
	}
	path := cmp.Or(m.DestinationPath, m.SourcePath)
	for id := range strings.SplitSeq(m.AutoCheckpoints, ",") {
		a.Autos = append(a.Autos, audit.Auto{ID: id, Reason: "before_delete", Path: path})
	}
	return a
}
