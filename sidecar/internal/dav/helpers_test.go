package dav

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint"
	"github.com/agentworkspace/files/internal/proctest"
)

// fakeClock is a settable clock for lock expiry.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// env is a handler on a real 127.0.0.1:0 listener over a davfs FS in a
// temp dir, with one project "demo".
type env struct {
	t        *testing.T
	url      string
	fs       *davfs.FS
	ck       *checkpoint.Store // beside fs (off unless newEnvCk)
	projects string            // host path of the projects root
	codex    string            // host path of CODEX_HOME
	logs     *proctest.Log
	reg      *prometheus.Registry
	clock    *fakeClock
	client   *http.Client
}

func newEnv(t *testing.T, mod func(*Options)) *env { return newEnvTB(t, t, mod) }

// newBenchEnv logs at info, as the sidecar does by default: successful
// reads log at debug, and a debug logger would put JSON encoding (and an
// ever-growing in-memory log) into every measured request.
func newBenchEnv(b *testing.B) *env {
	return newEnvTB(b, nil, func(o *Options) { o.Logger = benchLogger() })
}

// benchLogger is the sidecar's default logger (JSON at info) writing
// nowhere: a successful read logs nothing, as in production.
func benchLogger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: io.Discard, JSONFormat: true, Level: hclog.Info})
}

func newEnvTB(tb testing.TB, t *testing.T, mod func(*Options)) *env {
	tb.Helper()
	return newEnvFS(tb, t, nil, mod)
}

// newEnvFS is newEnvTB that also adjusts davfs's configuration (fsMod).
func newEnvFS(tb testing.TB, t *testing.T, fsMod func(*davfs.Config), mod func(*Options)) *env {
	return newEnvCk(tb, t, fsMod, checkpoint.Config{}, mod)
}

// newEnvCk is newEnvFS with the checkpoint store configured by ck.
func newEnvCk(tb testing.TB, t *testing.T, fsMod func(*davfs.Config), ck checkpoint.Config, mod func(*Options)) *env {
	tb.Helper()
	root := tb.TempDir()
	e := &env{t: t, projects: filepath.Join(root, "projects"), codex: filepath.Join(root, "codex"),
		logs: &proctest.Log{}, reg: prometheus.NewRegistry(),
		clock: &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	for _, d := range []string{e.projects, e.codex, filepath.Join(e.projects, "demo"), filepath.Join(e.projects, "other")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	cfg := davfs.Config{ProjectsRoot: e.projects, CodexHome: e.codex, DeniedNames: davfs.DefaultDeniedNames()}
	if fsMod != nil {
		fsMod(&cfg)
	}
	fs, err := davfs.Open(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { fs.Close() })
	e.fs = fs
	if e.ck, err = checkpoint.New(fs, ck, checkpoint.Options{Logger: cfg.Logger, Now: cfg.Now}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.ck.Close)
	opts := Options{
		Logger:                   hclog.New(&hclog.LoggerOptions{Output: e.logs, JSONFormat: true, Level: hclog.Debug}),
		Registerer:               e.reg,
		Now:                      e.clock.Now,
		AllowUnconditionalWrites: true,
	}
	if mod != nil {
		mod(&opts)
	}
	srv := httptest.NewUnstartedServer(New(fs, e.ck, opts))
	srv.Start() // httptest listens on 127.0.0.1:0
	tb.Cleanup(srv.Close)
	e.url = srv.URL
	e.client = &http.Client{Timeout: 30 * time.Second}
	return e
}

// do sends one request and returns the response with its body read.
func (e *env) do(method, path string, hdr map[string]string, body io.Reader) (*http.Response, string) {
	e.t.Helper()
	return e.doURL(method, e.url+path, hdr, body)
}

// doURL is do for a whole URL (another server on loopback).
func (e *env) doURL(method, url string, hdr map[string]string, body io.Reader) (*http.Response, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if s, ok := body.(*strings.Reader); ok {
		req.ContentLength = int64(s.Len())
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: reading body: %v", method, req.URL.Path, err)
	}
	return resp, string(b)
}

// want checks a status code.
func (e *env) want(method, path string, hdr map[string]string, body string, code int) (*http.Response, string) {
	e.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	resp, b := e.do(method, path, hdr, r)
	if resp.StatusCode != code {
		e.t.Fatalf("%s %s %v: status %d, want %d; body %q", method, path, hdr, resp.StatusCode, code, b)
	}
	return resp, b
}

// put writes a file over WebDAV and returns its ETag.
func (e *env) put(path, content string) string {
	e.t.Helper()
	resp, b := e.do("PUT", path, nil, strings.NewReader(content))
	if resp.StatusCode != 201 && resp.StatusCode != 204 {
		e.t.Fatalf("PUT %s: %d %q", path, resp.StatusCode, b)
	}
	return resp.Header.Get("ETag")
}

// hostFile reads a file of project demo on the host.
func (e *env) hostFile(rel string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(e.projects, "demo", filepath.FromSlash(rel)))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// multistatus is the subset of a 207 body the tests look at.
type multistatus struct {
	Responses []struct {
		Href      string `xml:"href"`
		Propstats []struct {
			Status string `xml:"status"`
			Prop   struct {
				ETag         string `xml:"getetag"`
				Length       string `xml:"getcontentlength"`
				LastModified string `xml:"getlastmodified"`
				ContentType  string `xml:"getcontenttype"`
				DisplayName  string `xml:"displayname"`
				ResourceType struct {
					Collection *struct{} `xml:"collection"`
				} `xml:"resourcetype"`
				SupportedLock *struct{} `xml:"supportedlock"`
				LockDiscovery *struct {
					Active []struct {
						Token string `xml:"locktoken>href"`
					} `xml:"activelock"`
				} `xml:"lockdiscovery"`
			} `xml:"prop"`
		} `xml:"propstat"`
	} `xml:"response"`
}

func parseMS(t *testing.T, body string) multistatus {
	t.Helper()
	var ms multistatus
	d := xml.NewDecoder(strings.NewReader(body))
	d.Strict = true
	if err := d.Decode(&ms); err != nil {
		t.Fatalf("multistatus is not well-formed XML: %v\n%s", err, body)
	}
	return ms
}
