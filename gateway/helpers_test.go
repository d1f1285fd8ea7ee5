package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/gateway/internal/fakesidecar"
)

const api = "/api/v1/agent-gateway"

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r response) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response is not JSON (%d): %v: %s", r.Status, err, r.Body)
	}
	return m
}

// reason returns the ErrorInfo reason of a REST error body.
func (r response) reason(t *testing.T) string {
	t.Helper()
	m := r.JSON(t)
	details, _ := m["details"].([]any)
	for _, d := range details {
		if dm, ok := d.(map[string]any); ok {
			if s, ok := dm["reason"].(string); ok {
				return s
			}
		}
	}
	return ""
}

func do(t *testing.T, req *http.Request) response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, req.URL.Path, err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// admin sends an admin-authenticated request; body may be "".
func admin(t *testing.T, g *gatewaytest.Gateway, method, path, body string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	return do(t, g.NewRequest(t, method, path, rd))
}

// twoFakes starts two fake sidecars and a gateway with codex-a, codex-b
// (both with sidecars) and codex-c (no sidecar).
func twoFakes(t *testing.T, opts gatewaytest.Options) (*gatewaytest.Gateway, *fakesidecar.Server, *fakesidecar.Server) {
	t.Helper()
	a, b := fakesidecar.Start(t, "codex-a"), fakesidecar.Start(t, "codex-b")
	opts.Agents = []gatewaytest.Agent{
		{ID: "codex-b", RPCAddr: b.Addr, DavURL: "https://" + b.Addr},
		{ID: "codex-a", RPCAddr: a.Addr, DavURL: "https://" + a.Addr},
		{ID: "codex-c"},
	}
	if opts.DefaultAgent == "" {
		opts.DefaultAgent = "codex-a"
	}
	return gatewaytest.Start(t, opts), a, b
}
