package gateway_test

// limits.uploadsPerAgent (issue #23, part 6) through the real agent-gateway
// and agent-sidecar binaries on 127.0.0.1: N slow PUTs hold the agent's N
// slots; one more is refused 429 TOO_MANY_UPLOADS with Retry-After before
// anything reaches the sidecar; a finished body frees its slot.

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/gateway"
	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// metricValue reads one sample (name with its labels, as exposed) from the
// gateway's metrics listener; -1 when absent.
func metricValue(t *testing.T, g *gatewaytest.Gateway, sample string) float64 {
	t.Helper()
	resp, err := http.Get(g.MetricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return -1
}

// slowPut starts a PUT of a new file whose body trickles from a pipe; the
// returned writer feeds it, closing it ends the body. The response arrives
// on the channel.
func slowPut(t *testing.T, g *gatewaytest.Gateway, name string) (*io.PipeWriter, <-chan *http.Response) {
	t.Helper()
	pr, pw := io.Pipe()
	req := g.NewRequest(t, "PUT", "/dav/codex-a/projects/demo/"+name, pr)
	req.Header.Set("If-None-Match", "*")
	req.ContentLength = -1 // chunked: the body ends when the pipe closes
	out := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("slow PUT %s: %v", name, err)
			out <- nil
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out <- resp
	}()
	t.Cleanup(func() { pw.Close() })
	return pw, out
}

func TestUploadsPerAgentLimit(t *testing.T) {
	const limit = 2
	sc := sidecartest.Start(t, sidecartest.Options{})
	if err := os.Mkdir(filepath.Join(sc.ProjectsDir, "demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	sidecartest.Chown(t, sc.ProjectsDir)
	g := gatewaytest.Start(t, gatewaytest.Options{
		Agents:        []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}},
		Writable:      true,
		MetricsServer: true,
		Configure:     func(c *gateway.Config) { n := limit; c.Limits.UploadsPerAgent = &n },
	})
	const inFlight = `agent_gateway_uploads_in_flight{agent_id="codex-a"}`

	var pipes []*io.PipeWriter
	var results []<-chan *http.Response
	for i := range limit {
		pw, res := slowPut(t, g, "slow"+strconv.Itoa(i)+".txt")
		if _, err := pw.Write([]byte("first bytes\n")); err != nil {
			t.Fatal(err)
		}
		pipes, results = append(pipes, pw), append(results, res)
	}
	deadline := time.Now().Add(10 * time.Second)
	for metricValue(t, g, inFlight) != limit {
		if time.Now().After(deadline) {
			t.Fatalf("in-flight uploads = %v, want %d", metricValue(t, g, inFlight), limit)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// One more: refused at once, nothing written.
	req := g.NewRequest(t, "PUT", "/dav/codex-a/projects/demo/over.txt", strings.NewReader("one too many\n"))
	req.Header.Set("If-None-Match", "*")
	r := do(t, req)
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Body), "too many uploads") {
		t.Fatalf("upload %d: %d %q Retry-After=%q", limit+1, r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	if _, err := os.Lstat(filepath.Join(sc.ProjectsDir, "demo", "over.txt")); !os.IsNotExist(err) {
		t.Fatalf("the refused upload reached the volume: %v", err)
	}
	// REST requests with a body share the agent's slots.
	rest := admin(t, g, "POST", "/api/v1/agent-gateway/agents/codex-a/projects/entries",
		`{"workspace":{"scope":"PROJECT","project_name":"demo"},"parent_path":"","name":"rest.txt","type":"ENTRY_TYPE_FILE"}`)
	if rest.Status != http.StatusTooManyRequests || rest.reason(t) != "TOO_MANY_UPLOADS" || rest.Header.Get("Retry-After") == "" {
		t.Fatalf("REST write at the upload cap: %d %s", rest.Status, rest.Body)
	}
	if _, err := os.Lstat(filepath.Join(sc.ProjectsDir, "demo", "rest.txt")); !os.IsNotExist(err) {
		t.Fatalf("the refused REST write reached the volume: %v", err)
	}
	for surface, want := range map[string]float64{"webdav": 1, "rest": 1} {
		if v := metricValue(t, g, `agent_gateway_uploads_refused_total{agent_id="codex-a",surface="`+surface+`"}`); v != want {
			t.Errorf("refused uploads (%s) = %v, want %v", surface, v, want)
		}
	}
	// Reads are not uploads.
	if r := admin(t, g, "GET", "/api/v1/agent-gateway/agents/codex-a/projects", ""); r.Status != http.StatusOK {
		t.Errorf("REST read at the upload cap: %d", r.Status)
	}
	pf := g.NewRequest(t, "PROPFIND", "/dav/codex-a/projects/demo/", nil)
	pf.Header.Set("Depth", "1")
	if r := do(t, pf); r.Status != http.StatusMultiStatus {
		t.Errorf("PROPFIND at the upload cap: %d", r.Status)
	}

	// A body that ends frees its slot: the next upload goes through.
	pipes[0].Close()
	if resp := <-results[0]; resp == nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("first slow PUT: %v", resp)
	}
	req = g.NewRequest(t, "PUT", "/dav/codex-a/projects/demo/after.txt", strings.NewReader("room again\n"))
	req.Header.Set("If-None-Match", "*")
	if r := do(t, req); r.Status != http.StatusCreated {
		t.Fatalf("upload after a slot was freed: %d %q", r.Status, r.Body)
	}
	pipes[1].Close()
	if resp := <-results[1]; resp == nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("second slow PUT: %v", resp)
	}
	if v := metricValue(t, g, inFlight); v != 0 {
		t.Errorf("in-flight uploads at the end = %v", v)
	}
	var refused, restRefused map[string]any
	for _, rec := range g.AuditRecords(t) {
		switch {
		case rec["reason"] != "TOO_MANY_UPLOADS":
		case rec["action"] == "webdav.PUT":
			refused = rec
		default:
			restRefused = rec
		}
	}
	if restRefused == nil || restRefused["result"] != "error" {
		t.Errorf("audit of the refused REST write: %v", restRefused)
	}
	if refused == nil || refused["result"] != "error" || refused["source_path"] != "over.txt" {
		t.Errorf("audit of the refused upload: %v", refused)
	}
}
