// Command mock-oidc runs oauth2-proxy's mockoidc, a real OpenID Connect
// provider for tests (the portal's browser tests, docs/sso.md), on
// 127.0.0.1:0 (--listen ADDR: another address, such as a node's bridge
// address its pods reach). It prints one JSON line on stderr with its address, issuer
// and client credentials ({"@message":"listening","server":"oidc",...}),
// then reads users as JSON lines on stdin ({"name","email","groups"}),
// queues each for the next login and answers {"@message":"queued"}. A line
// {"proxyArgs":{"url","upstream"}} answers {"@message":"proxy args","args"}:
// the oauth2-proxy flags of the Go tests (ssotest.ProxyArgs) for a proxy
// reached at url in front of upstream, listening on fd 3. It stops when
// stdin closes or on SIGTERM.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentworkspace/files/internal/ssotest"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mock-oidc:", err)
		os.Exit(1)
	}
	m, err := ssotest.NewOIDC(ln)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mock-oidc:", err)
		os.Exit(1)
	}
	cfg := m.Config()
	say(map[string]any{"@message": "listening", "server": "oidc", "address": strings.TrimPrefix(m.Addr(), "http://"),
		"issuer": cfg.Issuer, "client_id": cfg.ClientID, "client_secret": cfg.ClientSecret})
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			var u struct {
				ssotest.User
				ProxyArgs *struct{ URL, Upstream string } `json:"proxyArgs"`
			}
			err := json.Unmarshal(sc.Bytes(), &u)
			if err == nil && u.ProxyArgs != nil {
				say(map[string]any{"@message": "proxy args", "args": ssotest.ProxyArgs(cfg, u.ProxyArgs.URL, u.ProxyArgs.Upstream)})
				continue
			}
			if err != nil || u.Name == "" {
				say(map[string]any{"@message": "bad user line"})
				continue
			}
			m.QueueUser(u.User.Mock())
			say(map[string]any{"@message": "queued", "user": u.Name})
		}
	}()
	select {
	case <-stop:
	case <-done:
	}
	_ = m.Shutdown()
}

func say(v map[string]any) {
	b, _ := json.Marshal(v)
	fmt.Fprintln(os.Stderr, string(b))
}
