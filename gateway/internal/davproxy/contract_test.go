package davproxy

// ContractSidecar is a stand-in for the sidecar's WebDAV server that
// implements the gateway <-> sidecar wire contract (internal/davwire) on
// top of x/net/webdav, so the proxy's side of it can be tested before and
// independently of the real sidecar: it serves under X-Forwarded-Prefix
// (hrefs come out as /dav/{agent}/...), refuses writes on a read-only view,
// names the errtable reason of every error in X-Workspace-Error-Reason, and
// is the authority for preconditions (428 for a write onto an existing name
// without If-Match / If-None-Match / If, 412 on a stale one, 413 over its upload limit, 423
// from x/net's locks). PUT spools its body before deciding, as the real
// sidecar streams an upload before it takes its mutation lock, so a client
// that sent "Expect: 100-continue" gets its 100 and then the final status.
//
// It also misbehaves on purpose: leaky response headers naming its own
// address and an X-Workspace-* header the proxy must strip; any path
// ending in /stall sends nothing until the client goes away; any path
// ending in /drip streams DripSize bytes over DripTime.

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/webdav"

	"github.com/agentworkspace/files/internal/davwire"
	"github.com/agentworkspace/files/internal/pki"
	"github.com/agentworkspace/files/internal/pki/pkitest"
)

// testHostHeader records, in Seen, the Host the request arrived with.
const testHostHeader = "X-Test-Received-Host"

// ContractSidecar is exported for the gateway-binary tests (package
// davproxy_test).
type ContractSidecar struct {
	URL      string // http://127.0.0.1:PORT
	Root     string // holds projects/ and global/
	MaxBody  int64  // PUT limit; 413 above it
	DripSize int64
	DripTime time.Duration

	srv  *httptest.Server
	ls   webdav.LockSystem
	mu   sync.Mutex
	seen []http.Header
	// done releases requests held by /stall.
	done      chan struct{}
	closeOnce sync.Once
}

// NewContractSidecar starts one on 127.0.0.1 over a populated tree.
func NewContractSidecar(t testing.TB) *ContractSidecar {
	t.Helper()
	root := t.TempDir()
	populate(t, filepath.Join(root, "projects"), filepath.Join(root, "global"))
	if err := os.Remove(filepath.Join(root, "global/auth.json")); err != nil { // x/net/webdav would serve it
		t.Fatal(err)
	}
	f := &ContractSidecar{Root: root, MaxBody: 8 << 20, DripSize: 4 << 20, DripTime: 1500 * time.Millisecond, ls: webdav.NewMemLS()}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	f.done = make(chan struct{})
	t.Cleanup(func() { f.closeOnce.Do(func() { close(f.done) }) }) // before srv.Close: releases any stall
	f.URL = f.srv.URL
	return f
}

// NewContractSidecarTLS is NewContractSidecar serving mutual TLS as agentID's
// sidecar (a certificate from the test process's CA, internal/pki/pkitest),
// for a gateway process of gatewaytest; URL is https://.
func NewContractSidecarTLS(t testing.TB, agentID string) *ContractSidecar {
	t.Helper()
	f := NewContractSidecar(t)
	src, err := pki.NewSource(pki.SidecarFiles(pkitest.Dir(t, agentID), agentID), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Close()
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Listener = pki.Listen(f.srv.Listener, src.ServerConfig(pki.GatewayURI, pki.ProtoHTTP), pki.ListenOptions{})
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	f.URL = "https://" + f.Addr()
	return f
}

// Close stops the server (a stopped sidecar); stalled requests are let go.
func (f *ContractSidecar) Close() {
	f.closeOnce.Do(func() { close(f.done) })
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// Addr is the listener's 127.0.0.1:PORT.
func (f *ContractSidecar) Addr() string { return f.srv.Listener.Addr().String() }

// RefusingAddr is refusingAddr for package davproxy_test.
func RefusingAddr(t *testing.T) string { return refusingAddr(t) }

// Seen returns the request headers received so far.
func (f *ContractSidecar) Seen() []http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]http.Header(nil), f.seen...)
}

func (f *ContractSidecar) lastHeaders() http.Header {
	s := f.Seen()
	if len(s) == 0 {
		return nil
	}
	return s[len(s)-1]
}

func (f *ContractSidecar) url(t testing.TB) *url.URL {
	u, err := url.Parse(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// reasonFor is the fake's naming of x/net/webdav's own error statuses.
var reasonFor = map[int]string{400: "INVALID_ARGUMENT", 403: "FORBIDDEN", 404: "NOT_FOUND", 405: "ALREADY_EXISTS",
	409: "NOT_FOUND", 412: "REVISION_MISMATCH", 413: "TOO_LARGE", 415: "INVALID_ARGUMENT", 423: "LOCKED", 428: "PRECONDITION_REQUIRED",
	500: "INTERNAL", 502: "FORBIDDEN", 507: "NO_SPACE"}

type reasonWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *reasonWriter) WriteHeader(code int) {
	if !w.wrote && code >= 400 && w.Header().Get(davwire.ReasonHeader) == "" {
		w.Header().Set(davwire.ReasonHeader, reasonFor[code])
	}
	if code >= 200 {
		w.wrote = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *reasonWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

func (w *reasonWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

func fail(w http.ResponseWriter, status int, reason, msg string) {
	w.Header().Set(davwire.ReasonHeader, reason)
	http.Error(w, msg, status)
}

func (f *ContractSidecar) serve(rw http.ResponseWriter, r *http.Request) {
	seen := r.Header.Clone()
	seen.Set(testHostHeader, r.Host)
	f.mu.Lock()
	f.seen = append(f.seen, seen)
	f.mu.Unlock()
	w := &reasonWriter{ResponseWriter: rw}
	self := f.srv.Listener.Addr().String()
	w.Header().Set("Server", "fake-sidecar http://"+self)
	w.Header().Set("X-Upstream-Debug", "served by "+self)
	w.Header().Set("X-Workspace-Debug", "internal")
	w.Header().Set("X-Request-ID", "sidecar-made-"+r.Header.Get("X-Request-ID"))
	w.Header().Set("Cache-Control", "no-store")

	prefix := r.Header.Get(davwire.PrefixHeader)
	if prefix != "" && !davwire.ValidPrefix(prefix) {
		fail(w, http.StatusBadRequest, "INVALID_ARGUMENT", "invalid X-Forwarded-Prefix")
		return
	}
	rel := r.URL.Path
	if prefix != "" {
		var ok bool
		if rel, ok = strings.CutPrefix(r.URL.Path, prefix); !ok || !strings.HasPrefix(rel, "/") {
			fail(w, http.StatusNotFound, "NOT_FOUND", "not under the prefix")
			return
		}
	}
	switch {
	case strings.HasSuffix(rel, "/stall"):
		// Read the body first: net/http notices the client closing the
		// connection only once the body is consumed.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-f.done:
		}
		return
	case strings.HasSuffix(rel, "/drip"):
		w.Header().Set("Content-Length", fmt.Sprint(f.DripSize))
		w.WriteHeader(http.StatusOK)
		chunk := make([]byte, 64<<10)
		n := f.DripSize / int64(len(chunk))
		for i := int64(0); i < n; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.Flush()
			time.Sleep(f.DripTime / time.Duration(n))
		}
		return
	}
	if r.Header.Get(davwire.ReadOnlyHeader) == "true" && !readMethod(r.Method) {
		w.Header().Set("Allow", davwire.AllowRead)
		fail(w, http.StatusMethodNotAllowed, "READ_ONLY", "read-only view")
		return
	}
	if r.Method == http.MethodPut {
		// Spool first (this sends 100 Continue), decide after.
		tmp, err := os.CreateTemp("", "contract-put-")
		if err != nil {
			fail(w, 500, "INTERNAL", "spool")
			return
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		// MaxBytesReader on the connection's own writer: net/http then
		// closes the connection gracefully after the 413, as the sidecar's
		// does, so the client reads the answer before any reset.
		_, err = io.Copy(tmp, http.MaxBytesReader(rw, r.Body, f.MaxBody))
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			fail(w, http.StatusRequestEntityTooLarge, "TOO_LARGE", "the body exceeds the upload limit")
			return
		}
		if err != nil {
			fail(w, 500, "INTERNAL", "spool")
			return
		}
		if _, err := tmp.Seek(0, 0); err != nil {
			fail(w, 500, "INTERNAL", "spool")
			return
		}
		r.Body = tmp
	}
	if status, reason := f.precondition(r, rel, prefix); status != 0 {
		fail(w, status, reason, http.StatusText(status))
		return
	}
	(&webdav.Handler{Prefix: prefix, FileSystem: webdav.Dir(f.Root), LockSystem: f.ls}).ServeHTTP(w, r)
}

// precondition is the sidecar's write rule, roughly (docs/webdav-conformance.md
// "Preconditions"): a write onto an existing name needs If-Match (current),
// If-None-Match or an If header; a create needs none; If-Match on a
// missing name and If-None-Match: * on an existing one fail.
func (f *ContractSidecar) precondition(r *http.Request, rel, prefix string) (int, string) {
	target := rel
	switch r.Method {
	case http.MethodPut, http.MethodDelete, "MOVE":
	case "COPY":
		d, err := url.Parse(r.Header.Get("Destination"))
		if err != nil || r.Header.Get("Overwrite") == "F" {
			return 0, ""
		}
		target = strings.TrimPrefix(d.Path, prefix)
		if _, err := os.Stat(filepath.Join(f.Root, filepath.FromSlash(target))); err != nil {
			return 0, "" // not onto an existing name
		}
	default:
		return 0, ""
	}
	fi, err := os.Stat(filepath.Join(f.Root, filepath.FromSlash(target)))
	exists := err == nil
	etag := ""
	if exists {
		etag = fmt.Sprintf(`"%x%x"`, fi.ModTime().UnixNano(), fi.Size())
	}
	im, inm, ifh := r.Header.Get("If-Match"), r.Header.Get("If-None-Match"), r.Header.Get("If")
	switch {
	case im != "" && r.Method != "COPY" && (!exists || (im != "*" && im != etag)):
		return http.StatusPreconditionFailed, "REVISION_MISMATCH"
	case inm == "*" && exists:
		return http.StatusPreconditionFailed, "REVISION_MISMATCH"
	case im == "" && inm == "" && ifh == "" && exists:
		return http.StatusPreconditionRequired, "PRECONDITION_REQUIRED"
	}
	return 0, ""
}
