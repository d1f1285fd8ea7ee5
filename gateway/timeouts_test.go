package gateway_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentworkspace/files/gateway"
	"github.com/agentworkspace/files/gateway/gatewaytest"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

// The bounds the slow-client tests configure, and how much later than the
// bound the gateway may act on this shared, busy machine.
const (
	shortTimeout = time.Second
	slack        = 3 * time.Second
)

func shortTimeouts(cfg *gateway.Config) {
	d := shortTimeout
	cfg.HTTPServer.ReadHeaderTimeout = &d
	cfg.HTTPServer.BodyReadTimeout = &d
	cfg.HTTPServer.BodyIdleTimeout = &d
}

// slowClient is a raw HTTP/1.1 client on 127.0.0.1 that writes a request
// a few bytes at a time.
type slowClient struct {
	t     *testing.T
	conn  net.Conn
	br    *bufio.Reader
	start time.Time
}

func dialSlow(t *testing.T, addr string) *slowClient {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	return &slowClient{t: t, conn: c, br: bufio.NewReader(c), start: time.Now()}
}

// send writes head at once, then body in pieces of n bytes, gap apart, in
// the background, and stops at the first write error (the gateway closed
// the connection).
func (c *slowClient) send(head string, body []byte, n int, gap time.Duration) {
	if _, err := io.WriteString(c.conn, head); err != nil {
		c.t.Fatal(err)
	}
	c.trickle(body, n, gap)
}

// trickle writes b in pieces of n bytes, gap apart, in the background, and
// stops at the first write error (the gateway closed the connection).
func (c *slowClient) trickle(b []byte, n int, gap time.Duration) {
	go func() {
		for len(b) > 0 {
			k := min(n, len(b))
			if _, err := c.conn.Write(b[:k]); err != nil {
				return
			}
			b = b[k:]
			if len(b) > 0 {
				time.Sleep(gap)
			}
		}
	}()
}

// response reads one response; ok=false when the connection ended first.
func (c *slowClient) response() (resp *http.Response, body string, ok bool) {
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return nil, "", false
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), true
}

// closed waits for the gateway to close the connection and reports when.
func (c *slowClient) closed() time.Duration {
	c.t.Helper()
	_, err := io.Copy(io.Discard, c.br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("the gateway did not close the connection within 30s")
	}
	return time.Since(c.start)
}

func (c *slowClient) within(what string, d time.Duration, bound time.Duration) {
	c.t.Helper()
	if d > bound+slack {
		c.t.Errorf("%s after %v, bound %v", what, d.Round(time.Millisecond), bound)
	}
}

// Issue #13: the gateway had no body read timeout (1,500 slow
// unauthenticated connections were held open). Headers are bounded by
// httpServer.readHeaderTimeout; the body of a request that is not
// authenticated by httpServer.bodyReadTimeout as a whole; an authenticated
// body by httpServer.bodyIdleTimeout per read, so a slow upload that keeps
// making progress is never cut.
func TestSlowClients(t *testing.T) {
	g, a, _ := twoFakes(t, gatewaytest.Options{Configure: shortTimeouts})

	t.Run("headers trickled", func(t *testing.T) {
		c := dialSlow(t, g.Addr)
		c.trickle([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n"+strings.Repeat("X-Slow: 1\r\n", 40)+"\r\n"), 4, 200*time.Millisecond)
		c.within("headers: connection closed", c.closed(), shortTimeout)
	})

	t.Run("login body trickled", func(t *testing.T) {
		c := dialSlow(t, g.Addr)
		body := `{"token":"` + strings.Repeat("x", 80) + `"}`
		c.send(fmt.Sprintf("POST %s/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", api, len(body)), []byte(body), 2, 200*time.Millisecond)
		resp, text, ok := c.response()
		if !ok || resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(text, "did not arrive in time") {
			t.Errorf("response %v %q, want 408", resp, text)
		}
		c.within("login: 408", time.Since(c.start), shortTimeout)
		c.within("login: connection closed", c.closed(), shortTimeout)
	})

	for _, target := range []string{"PUT /dav/codex-a/projects/demo/x.bin", "PUT " + api + "/agents/codex-a/projects/files"} {
		t.Run("unauthenticated body trickled: "+target, func(t *testing.T) {
			c := dialSlow(t, g.Addr)
			body := bytes.Repeat([]byte("y"), 64<<10)
			c.send(fmt.Sprintf("%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", target, len(body)), body, 64, 100*time.Millisecond)
			resp, _, ok := c.response()
			if !ok || resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("response %v, want 401", resp)
			}
			c.within("unauthenticated: connection closed", c.closed(), shortTimeout)
		})
	}

	t.Run("authenticated REST upload making progress", func(t *testing.T) {
		a.Put(t, "demo", "slow.txt", "old")
		body := updateBody("demo", "slow.txt", strings.Repeat("new text ", 30), a.Revision(t, "demo", "slow.txt"))
		c := dialSlow(t, g.Addr)
		// ≈ 2.5 s in all, more than either bound, a piece every 250 ms.
		n := len(body)/10 + 1
		c.send(fmt.Sprintf("PUT %s/agents/codex-a/projects/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", api, g.AdminToken, len(body)), []byte(body), n, 250*time.Millisecond)
		resp, text, ok := c.response()
		if !ok || resp.StatusCode != http.StatusOK {
			t.Fatalf("slow authenticated upload: %v %s", resp, text)
		}
		if d := time.Since(c.start); d < 2*shortTimeout {
			t.Errorf("the upload took only %v: not slower than the bounds", d)
		}
		got, _, _ := getFile(t, g, "codex-a", "demo", "slow.txt")
		if got != strings.Repeat("new text ", 30) {
			t.Errorf("content after the slow upload: %q", got)
		}
	})

	t.Run("authenticated REST upload stalled", func(t *testing.T) {
		a.Put(t, "demo", "stall.txt", "old")
		body := updateBody("demo", "stall.txt", "never", a.Revision(t, "demo", "stall.txt"))
		c := dialSlow(t, g.Addr)
		c.send(fmt.Sprintf("PUT %s/agents/codex-a/projects/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", api, g.AdminToken, len(body)),
			[]byte(body[:len(body)/2]), len(body), 0) // then nothing
		resp, text, ok := c.response()
		if !ok || resp.StatusCode != http.StatusRequestTimeout {
			t.Errorf("stalled upload: %v %q, want 408", resp, text)
		}
		c.within("stalled upload: 408", time.Since(c.start), shortTimeout)
		c.within("stalled upload: connection closed", c.closed(), shortTimeout)
		got, _, _ := getFile(t, g, "codex-a", "demo", "stall.txt")
		if got != "old" {
			t.Errorf("stall.txt changed: %q", got)
		}
	})
}

// A WebDAV upload through the gateway to a real sidecar that takes longer
// than every bound but keeps making progress succeeds; one that stalls is
// cut after httpServer.bodyIdleTimeout and leaves nothing behind.
func TestSlowWebDAVUpload(t *testing.T) {
	sc := sidecartest.Start(t, sidecartest.Options{})
	g := gatewaytest.Start(t, gatewaytest.Options{
		Agents:    []gatewaytest.Agent{{ID: "codex-a", RPCAddr: sc.RPCAddr, DavURL: sc.DavURL}},
		Writable:  true,
		Configure: shortTimeouts,
	})
	if r := admin(t, g, http.MethodPost, api+"/agents/codex-a/projects", `{"name":"up"}`); r.Status != http.StatusOK {
		t.Fatalf("create project: %d %s", r.Status, r.Body)
	}
	put := func(name string, body []byte) string {
		return fmt.Sprintf("PUT /dav/codex-a/projects/up/%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nIf-None-Match: *\r\nContent-Length: %d\r\n\r\n", name, g.Addr, g.AdminToken, len(body))
	}

	body := bytes.Repeat([]byte("0123456789abcdef"), 16<<10) // 256 KiB in 10 pieces, 300 ms apart
	c := dialSlow(t, g.Addr)
	c.send(put("slow.bin", body), body, len(body)/10+1, 300*time.Millisecond)
	resp, text, ok := c.response()
	if !ok || (resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusNoContent) {
		t.Fatalf("slow WebDAV PUT: %v %q", resp, text)
	}
	if d := time.Since(c.start); d < 2*shortTimeout {
		t.Errorf("the upload took only %v: not slower than the bounds", d)
	}
	if got, err := os.ReadFile(filepath.Join(sc.ProjectsDir, "up", "slow.bin")); err != nil || !bytes.Equal(got, body) {
		t.Errorf("slow.bin on the volume: %d bytes, %v; want %d", len(got), err, len(body))
	}

	c = dialSlow(t, g.Addr)
	c.send(put("stalled.bin", body), body[:len(body)/4], len(body), 0) // then nothing
	if resp, _, ok := c.response(); ok && resp.StatusCode < 400 {
		t.Errorf("stalled WebDAV PUT: %d", resp.StatusCode)
	}
	c.within("stalled WebDAV PUT: answered or closed", c.closed(), shortTimeout)
	time.Sleep(200 * time.Millisecond)
	entries, err := os.ReadDir(filepath.Join(sc.ProjectsDir, "up"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, ","); got != ".git,slow.bin" {
		t.Errorf("project up holds %s after the stalled upload, want .git,slow.bin", got)
	}
}
