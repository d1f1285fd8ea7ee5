package e2e

import (
	"os"
	"testing"

	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/internal/restwalk"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// TestAcceptance runs PRD §15.5 steps 1-10 in order (internal/restwalk, the
// walk the Kubernetes node tier runs too) against a gateway and two
// sidecars on 127.0.0.1; each step is a subtest and later steps depend on
// earlier ones, so the first failure stops the run.
func TestAcceptance(t *testing.T) {
	a := sidecartest.Start(t, sidecartest.Options{})
	b := sidecartest.Start(t, sidecartest.Options{AgentID: restwalk.AgentB})
	gw := gatewaytest.Start(t, gatewaytest.Options{Agents: []gatewaytest.Agent{
		{ID: restwalk.AgentA, RPCAddr: a.RPCAddr, DavURL: a.DavURL},
		{ID: restwalk.AgentB, RPCAddr: b.RPCAddr, DavURL: b.DavURL},
	}})
	w := restwalk.New(t, restwalk.Target{
		Client:    restwalk.Client{URL: gw.URL, Token: gw.AdminToken},
		ProjectsA: a.ProjectsDir, ProjectsB: b.ProjectsDir, HomeA: a.CodexHome, HomeB: b.CodexHome,
		Outside:  t.TempDir(),
		Operator: gatewaytest.AdminOperator,
		AsAgent:  func(t *testing.T, p string) { sidecartest.Chown(t, p) },
		StopB: func(t *testing.T) {
			if err := b.Stop(); err != nil {
				t.Fatalf("stop codex-b: %v", err)
			}
		},
		Endpoints:    func(*testing.T) []string { return []string{"127.0.0.1", b.RPCAddr} },
		AuditRecords: func(t *testing.T) []map[string]any { return gw.AuditRecords(t) },
		Logs: func(t *testing.T, w *restwalk.Walk) []restwalk.Log {
			raw, err := os.ReadFile(gw.AuditFile)
			if err != nil {
				t.Fatal(err)
			}
			contentOrSecret := []string{w.Body, w.Secret}
			return []restwalk.Log{
				{Name: "audit file", Text: string(raw), Never: append(append(w.Content(), w.Secrets()...),
					a.RPCAddr, b.RPCAddr, a.ProjectsDir, a.CodexHome)},
				{Name: "gateway log", Text: gw.Logs(), Never: append([]string{w.Body}, w.Secrets()...)},
				{Name: "codex-a sidecar log", Text: a.Logs(), Never: contentOrSecret},
				{Name: "codex-b sidecar log", Text: b.Logs(), Never: contentOrSecret},
			}
		},
	})
	restwalk.Run(t, w.Steps()...)
}
