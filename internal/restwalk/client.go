// Package restwalk drives the PRD §15.5 walk-through (steps 1-10) through
// a gateway's REST API and WebDAV view, as one admin client would. The
// acceptance test (deploy/e2e) runs it against a gateway and two sidecars
// started as processes on 127.0.0.1; the Kubernetes node tier
// (deploy/k8s/tier) against the gateway's Service in a real cluster. Each
// hands it a Target: the gateway, where the agents' volumes are on this
// machine, and what differs between the two (acting as the agent, stopping
// a sidecar, reading the audit records and the logs). See the
// package map in docs/architecture.md.
package restwalk

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// API is the REST API's agents collection.
const API = "/api/v1/agent-gateway/agents"

// requestTimeout bounds one request (a bound, not an assertion: a request
// that takes longer fails the step instead of hanging it).
const requestTimeout = 30 * time.Second

// Client talks to a gateway as one admin, through its public surfaces only:
// REST with a bearer token, WebDAV with Basic auth.
type Client struct {
	URL   string // the gateway's base URL, no trailing slash
	Token string // an admin token
}

// Reply is one response, read whole; JSON is its body decoded when it is a
// JSON object.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
	JSON   map[string]any
}

// Try sends one REST request (body, when not nil, as JSON; hdr as name,
// value pairs) and returns a transport error instead of failing: for waits
// while an address is not reachable yet.
func (c Client) Try(method, path string, body any, hdr ...string) (Reply, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return Reply{}, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, rd)
	if err != nil {
		return Reply{}, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return send(req, hdr)
}

// Do is Try, failing the test on a transport error.
func (c Client) Do(t testing.TB, method, path string, body any, hdr ...string) Reply {
	t.Helper()
	r, err := c.Try(method, path, body, hdr...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// Dav sends one bodiless WebDAV request with Basic auth, as a WebDAV client
// would.
func (c Client) Dav(t testing.TB, method, path string, hdr ...string) Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("admin", c.Token)
	r, err := send(req, hdr)
	if err != nil {
		t.Fatalf("WebDAV %s %s: %v", method, path, err)
	}
	return r
}

func send(req *http.Request, hdr []string) (Reply, error) {
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Reply{}, err
	}
	r := Reply{Status: resp.StatusCode, Header: resp.Header, Body: b}
	_ = json.Unmarshal(b, &r.JSON)
	return r, nil
}

// Must fails the test unless r has the wanted status.
func Must(t testing.TB, want int, r Reply, what string) Reply {
	t.Helper()
	if r.Status != want {
		t.Fatalf("%s: status %d, want %d: %s", what, r.Status, want, r.Body)
	}
	return r
}

// Reason is the ErrorInfo reason of an error reply, or "".
func (r Reply) Reason() string {
	details, _ := r.JSON["details"].([]any)
	for _, d := range details {
		if m, ok := d.(map[string]any); ok {
			if s, ok := m["reason"].(string); ok {
				return s
			}
		}
	}
	return ""
}

// Names are the entry names of a listing reply, in its order.
func (r Reply) Names() []string {
	var out []string
	list, _ := r.JSON["entries"].([]any)
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			s, _ := m["name"].(string)
			out = append(out, s)
		}
	}
	return out
}

// Q is the path of /agents/{agent}/projects/{what} with the workspace and
// path query ("" leaves project or path out).
func Q(agent, what, scope, project, path string) string {
	v := url.Values{"workspace.scope": {scope}}
	if project != "" {
		v.Set("workspace.project_name", project)
	}
	if path != "" {
		v.Set("path", path)
	}
	return API + "/" + agent + "/projects/" + what + "?" + v.Encode()
}

// WS is a request body's workspace reference.
func WS(scope, project string) map[string]any {
	m := map[string]any{"scope": scope}
	if project != "" {
		m["project_name"] = project
	}
	return m
}
