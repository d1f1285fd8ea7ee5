package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/internal/testtree"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// searchStack is a real sidecar and gateway over a project "demo" with a
// denied directory, a binary file and a symlink to a canary beside the
// volume.
func searchStack(t *testing.T) (*sidecartest.Sidecar, *gatewaytest.Gateway, string) {
	t.Helper()
	sc := sidecartest.Start(t, sidecartest.Options{})
	demo := filepath.Join(sc.ProjectsDir, "demo")
	canary := filepath.Join(t.TempDir(), "canary.txt")
	files := map[string]string{
		"main.go":           "package main\n\n// TODO one\n",
		"src/util.go":       "package src\nvar x = 1 // TODO two\n",
		"node_modules/a.js": "TODO denied\n",
		"bin.dat":           "TODO\x00\x01",
	}
	for name, body := range files {
		p := filepath.Join(demo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(canary, []byte("TODO canary\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(canary, filepath.Join(demo, "link.txt")); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"skills/s/SKILL.md": "TODO skill\n", "AGENTS.md": "TODO agents\n", "auth.json": "TODO secret\n", "sessions/x.txt": "TODO session\n"} {
		p := filepath.Join(sc.CodexHome, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sidecartest.Chown(t, sc.ProjectsDir)
	sidecartest.Chown(t, sc.CodexHome)
	g := gatewaytest.Start(t, gatewaytest.Options{Agents: []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}}})
	return sc, g, filepath.Dir(canary)
}

type searchLine struct {
	Result *struct {
		Match *struct {
			Path       string `json:"path"`
			Line       int    `json:"line"`
			Preview    string `json:"preview"`
			MatchStart int    `json:"match_start"`
			MatchEnd   int    `json:"match_end"`
		} `json:"match"`
		Summary *struct {
			Results   int    `json:"results"`
			Truncated string `json:"truncated"`
		} `json:"summary"`
	} `json:"result"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// searchREST runs one search; it returns the status, the lines (when 200)
// and the error reason (otherwise).
func searchREST(t *testing.T, g *gatewaytest.Gateway, auth string, q url.Values) (int, []searchLine, string) {
	t.Helper()
	req := g.NewRequest(t, http.MethodGet, api+"/agents/codex-a/search?"+q.Encode(), nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp := do(t, req)
	if resp.Status != 200 {
		return resp.Status, nil, resp.reason(t)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("Content-Type %q", ct)
	}
	var out []searchLine
	sc := bufio.NewScanner(bytes.NewReader(resp.Body))
	for sc.Scan() {
		var l searchLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return 200, out, ""
}

func query(kv ...string) url.Values {
	q := url.Values{"workspace.scope": {"PROJECT"}, "workspace.project_name": {"demo"}}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Add(kv[i], kv[i+1])
	}
	return q
}

func TestSearchREST(t *testing.T) {
	sc, g, canaryDir := searchStack(t)
	before := testtree.Snap(t, sc.ProjectsDir)
	beforeCanary := testtree.Snap(t, canaryDir)

	t.Run("content", func(t *testing.T) {
		st, lines, reason := searchREST(t, g, "", query("query", "TODO", "case_sensitive", "true"))
		if st != 200 {
			t.Fatalf("status %d %s", st, reason)
		}
		var got []string
		for _, l := range lines[:len(lines)-1] {
			m := l.Result.Match
			got = append(got, m.Path)
			if m.Preview[m.MatchStart:m.MatchEnd] != "TODO" || m.Line != 3 && m.Line != 2 {
				t.Fatalf("match %+v", m)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, []string{"main.go", "src/util.go"}) {
			t.Fatalf("paths %v (the denied dir, the binary file and the symlink must not appear)", got)
		}
		if s := lines[len(lines)-1].Result.Summary; s == nil || s.Results != 2 || s.Truncated != "" {
			t.Fatalf("last line %+v, want the summary", lines[len(lines)-1])
		}
	})
	t.Run("global: skills and AGENTS.md only", func(t *testing.T) {
		q := url.Values{"workspace.scope": {"GLOBAL"}, "query": {"TODO"}}
		st, lines, reason := searchREST(t, g, "", q)
		if st != 200 {
			t.Fatalf("status %d %s", st, reason)
		}
		var got []string
		for _, l := range lines {
			if m := l.Result.Match; m != nil {
				got = append(got, m.Path)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, []string{"AGENTS.md", "skills/s/SKILL.md"}) {
			t.Fatalf("paths %v", got)
		}
	})
	t.Run("names", func(t *testing.T) {
		_, lines, _ := searchREST(t, g, "", query("query", "util", "mode", "SEARCH_MODE_NAME"))
		if len(lines) != 2 || lines[0].Result.Match.Path != "src/util.go" {
			t.Fatalf("lines %+v", lines)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		_, lines, _ := searchREST(t, g, "", query("query", "TODO", "max_results", "1", "include", "*.go"))
		if len(lines) != 2 || lines[1].Result.Summary.Truncated != "max_results" {
			t.Fatalf("lines %+v", lines)
		}
	})
	cases := []struct {
		name   string
		auth   string
		q      url.Values
		status int
		reason string
	}{
		{"bad regex", "", query("query", "(open", "regex", "true"), 400, "INVALID_ARGUMENT"},
		{"empty query", "", query(), 400, "INVALID_ARGUMENT"},
		{"dot segment", "", query("query", "x", "path", "src/../.."), 400, "INVALID_PATH"},
		{"empty segment", "", query("query", "x", "path", "src//x"), 400, "INVALID_PATH"},
		{"denied path", "", query("query", "x", "path", "node_modules"), 403, "DENYLISTED"},
		{"symlink path", "", query("query", "x", "path", "link.txt"), 403, "SYMLINK"},
		{"outside global", "", url.Values{"workspace.scope": {"GLOBAL"}, "query": {"x"}, "path": {"auth.json"}}, 403, "OUTSIDE_GLOBAL"},
		{"no scope", "", url.Values{"query": {"x"}}, 400, "INVALID_WORKSPACE"},
		{"not admin", "Bearer " + g.UserToken, query("query", "x"), 403, "FORBIDDEN"},
		{"no credentials", "Bearer nope", query("query", "x"), 401, "UNAUTHENTICATED"},
		{"bad parameter", "", query("query", "x", "max_results", "many"), 400, "INVALID_ARGUMENT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, _, reason := searchREST(t, g, c.auth, c.q)
			if st != c.status || reason != c.reason {
				t.Fatalf("status %d %s, want %d %s", st, reason, c.status, c.reason)
			}
		})
	}
	if r := admin(t, g, http.MethodGet, api+"/agents/codex-a/search?"+query("query", "(open", "regex", "true").Encode(), ""); !strings.Contains(r.JSON(t)["message"].(string), "not a valid RE2 regular expression: missing closing )") {
		t.Fatalf("bad regex: %s", r.Body)
	}
	if r := admin(t, g, http.MethodGet, api+"/agents/nope/search?"+query("query", "x").Encode(), ""); r.Status != 404 || r.reason(t) != "AGENT_NOT_FOUND" {
		t.Fatalf("unknown agent: %d %s", r.Status, r.reason(t))
	}
	testtree.MustSame(t, "the volume after searching", before, testtree.Snap(t, sc.ProjectsDir))
	testtree.MustSame(t, "the canary after searching", beforeCanary, testtree.Snap(t, canaryDir))
}

// TestSearchRESTClientGone: a client that goes away mid-stream ends the
// sidecar's walk (the stream's context), and the gateway keeps serving.
func TestSearchRESTClientGone(t *testing.T) {
	sc, g, _ := searchStack(t)
	for i := range 2000 {
		p := filepath.Join(sc.ProjectsDir, "demo", "many", strings.Repeat("d", 1+i%7), "f"+strconv.Itoa(i)+".txt")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat("TODO line\n", 20)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sidecartest.Chown(t, sc.ProjectsDir)
	ctx, cancel := context.WithCancel(context.Background())
	req := g.NewRequest(t, http.MethodGet, api+"/agents/codex-a/search?"+query("query", "TODO", "max_results", "10000").Encode(), nil).WithContext(ctx)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", err, resp)
	}
	r := bufio.NewReader(resp.Body)
	if _, err := r.ReadBytes('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	if !sc.WaitLog(`"error":"search canceled","method":"/workspace.v1.WorkspaceService/Search"`, 10*time.Second) {
		t.Fatalf("the sidecar logged no canceled search stream:\n%s", sc.Logs())
	}
	if st, _, reason := searchREST(t, g, "", query("query", "TODO one")); st != 200 {
		t.Fatalf("after a client went away: %d %s", st, reason)
	}
}
