package ssotest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"
)

// ProxyOptions configures StartProxy.
type ProxyOptions struct {
	Upstream string // http://127.0.0.1:PORT of the gateway
	// AllowedGroups, when set, are --allowed-group: the proxy itself
	// refuses everyone else (the gateway's adminGroups refuse them anyway).
	AllowedGroups []string
	Extra         []string // more flags
}

// Proxy is one running oauth2-proxy.
type Proxy struct {
	URL  string // http://127.0.0.1:PORT
	mu   sync.Mutex
	logs strings.Builder
}

// Logs returns what the proxy printed so far.
func (p *Proxy) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

func (p *Proxy) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.Write(b)
}

// ProxyArgs are the flags of an oauth2-proxy in front of upstream, against
// the OIDC provider m, listening on fd 3 and reached at url (what the dev
// overlay sets too, docs/sso.md): identity to the upstream as
// X-Forwarded-User (the subject), X-Forwarded-Email, X-Forwarded-Groups,
// X-Forwarded-Preferred-Username, stripped from every incoming request.
func ProxyArgs(cfg *mockoidc.Config, url, upstream string) []string {
	return []string{
		"--http-address=fd:3",
		"--provider=oidc",
		"--provider-display-name=Test OIDC",
		"--oidc-issuer-url=" + cfg.Issuer,
		"--client-id=" + cfg.ClientID,
		"--client-secret=" + cfg.ClientSecret,
		"--redirect-url=" + url + "/oauth2/callback",
		"--upstream=" + upstream,
		"--cookie-secret=" + CookieSecret(),
		"--cookie-secure=false",
		"--email-domain=*",
		"--scope=openid email profile groups",
		"--oidc-groups-claim=groups",
		"--code-challenge-method=S256",
		"--pass-user-headers=true",
		"--skip-auth-strip-headers=true",
		"--reverse-proxy=false",
		"--silence-ping-logging=true",
	}
}

// StartProxy starts the built oauth2-proxy on 127.0.0.1:0 in front of
// opts.Upstream against m, waits for /ping and stops it in t.Cleanup.
func StartProxy(t testing.TB, m *mockoidc.MockOIDC, opts ProxyOptions) *Proxy {
	t.Helper()
	bin := ProxyBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.(*net.TCPListener).File()
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := &Proxy{URL: "http://" + ln.Addr().String()}
	args := ProxyArgs(m.Config(), p.URL, opts.Upstream)
	for _, g := range opts.AllowedGroups {
		args = append(args, "--allowed-group="+g)
	}
	args = append(args, opts.Extra...)
	cmd := ActivatedCommand(bin, args...)
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stdout, cmd.Stderr = p, p
	if err := cmd.Start(); err != nil {
		t.Fatalf("ssotest: start oauth2-proxy: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	if err := waitPing(p.URL, done); err != nil {
		t.Fatalf("ssotest: oauth2-proxy: %v\nlogs:\n%s", err, p.Logs())
	}
	return p
}

// ActivatedCommand runs bin with fd 3 as a socket-activated listener:
// LISTEN_PID must be the proxy's own PID, which only a shell that execs
// it knows beforehand.
func ActivatedCommand(bin string, args ...string) *exec.Cmd {
	return exec.Command("/bin/sh", append([]string{"-c", `LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@"`, bin}, args...)...)
}

func waitPing(url string, exited <-chan struct{}) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			return fmt.Errorf("exited during start-up")
		default:
		}
		if r, err := http.Get(url + "/ping"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no /ping answer after 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
