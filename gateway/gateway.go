// Package gateway assembles the agent-gateway: config, auth, the in-process
// WorkspaceManagementService with one gRPC client per agent sidecar, the
// REST API, the WebDAV view, audit, metrics and the portal, served by one
// echo HTTP server, plus an optional cluster-internal metrics listener
// (/metrics, /healthz, /readyz, unauthenticated). Replicas share sign-outs
// through the Kubernetes API (auth.session.signOutConfigMap, see
// internal/signouts); a lone gateway keeps them in process.
package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentworkspace/files/gateway/internal/audit"
	"github.com/agentworkspace/files/gateway/internal/auth"
	"github.com/agentworkspace/files/gateway/internal/config"
	"github.com/agentworkspace/files/gateway/internal/discovery"
	"github.com/agentworkspace/files/gateway/internal/httpapi"
	"github.com/agentworkspace/files/gateway/internal/kube"
	"github.com/agentworkspace/files/gateway/internal/metrics"
	"github.com/agentworkspace/files/gateway/internal/mgmt"
	"github.com/agentworkspace/files/gateway/internal/portal"
	"github.com/agentworkspace/files/gateway/internal/session"
	"github.com/agentworkspace/files/gateway/internal/signouts"
	"github.com/agentworkspace/files/gateway/internal/uploads"
	"github.com/agentworkspace/files/internal/pki"
)

// Config is the gateway configuration (see internal/config).
type Config = config.Config

// LoadConfig reads and strictly parses a config file; call Validate next.
func LoadConfig(path string) (*Config, error) { return config.Load(path) }

// Deps are handed in by main (or tests); nothing is global.
type Deps struct {
	Logger hclog.Logger
	// Registry receives every metric; nil creates a fresh one.
	Registry *prometheus.Registry
	// Now is the clock; nil uses time.Now.
	Now func() time.Time
	// Kube is the Kubernetes client for agentRuntime.discovery; nil builds
	// one from the kubernetes: block (tests hand in their own).
	Kube *kube.Client
}

// Gateway is a configured, not yet listening gateway.
type Gateway struct {
	cfg     *Config
	log     hclog.Logger
	reg     *prometheus.Registry
	svc     *mgmt.Service
	audit   *audit.Logger
	signOut *signouts.Shared // nil without auth.session.signOutConfigMap
	handler http.Handler
	stop    chan struct{}         // closed at shutdown: ends live-change streams
	disc    *discovery.Discoverer // nil without agentRuntime.discovery
	ready   func() bool           // nil: always ready (readiness)
}

// New builds the gateway from a validated config.
func New(cfg *Config, d Deps) (_ *Gateway, err error) {
	if cfg.Auth.TokensFile != "" && cfg.Auth.FileTokens == nil {
		cfg.LoadTokensFile()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cmp.Or(d.Logger, hclog.NewNullLogger())
	reg := cmp.Or(d.Registry, prometheus.NewRegistry())
	now := d.Now
	if now == nil {
		now = time.Now
	}
	m, err := metrics.New(reg)
	if err != nil {
		return nil, err
	}
	al, err := audit.Open(log, cfg.Audit.File, now)
	if err != nil {
		return nil, err
	}
	tlsSrc, err := sidecarTLS(cfg, log)
	if err != nil {
		al.Close()
		return nil, err
	}
	svc, err := mgmt.New(cfg.AgentRuntime, mgmt.Deps{Audit: al, Metrics: m, Logger: log.Named("mgmt"), Now: now, TLS: tlsSrc})
	if err != nil {
		al.Close()
		return nil, err
	}
	var disc *discovery.Discoverer // nil without agentRuntime.discovery
	defer func() {
		if err != nil {
			disc.Stop() // nil-safe
			svc.Close()
			al.Close()
		}
	}()
	store := session.New(now, cfg.Auth.Session.SessionLifetime(), 0, cfg.Auth.Session.SealKeys()...)
	authn := auth.New(cfg.Auth, store)
	kc, err := kubeFor(cfg, d.Kube)
	if err != nil {
		return nil, err
	}
	shared, err := sharedSignOuts(cfg, kc, store, log, reg, now)
	if err != nil {
		return nil, err
	}
	slots, err := uploads.New(cfg.Limits.Uploads(), svc.Known, reg)
	if err != nil {
		return nil, err
	}
	dav, err := newDAV(cfg, svc, log, reg, al, now, slots, tlsSrc)
	if err != nil {
		return nil, err
	}
	wm, err := httpapi.NewWatchMetrics(reg)
	if err != nil {
		return nil, err
	}
	if disc, err = startDiscovery(cfg, kc, svc, log); err != nil {
		return nil, err
	}
	ready := readiness(shared, disc)
	stop := make(chan struct{})
	srv, err := httpapi.New(httpapi.Options{
		Watch: svc, WatchMetrics: wm, Stopping: stop, Search: svc,
		Auth: authn, Service: svc, Checkpoints: svc.Checkpoints(), Metrics: m, Gatherer: reg, DAV: dav,
		Portal: portal.New(), Writable: cfg.WebDAV.Writable, Audit: al, Logger: log.Named("http"), Now: now,
		BodyReadTimeout: cfg.HTTPServer.BodyRead(), BodyIdleTimeout: cfg.HTTPServer.BodyIdle(),
		WatchHeartbeat: cfg.HTTPServer.Heartbeat(),
		SignOut:        signOuter(shared), Ready: ready, Uploads: slots,
	})
	if err != nil {
		return nil, err
	}
	return &Gateway{cfg: cfg, log: log, reg: reg, svc: svc, audit: al, signOut: shared, handler: srv, stop: stop, disc: disc, ready: ready}, nil
}

// kubeFor is the one Kubernetes client that discovery and shared
// sign-outs both use: kc when the caller handed one in, else one built from
// the kubernetes: block when either is on (nil when neither is).
func kubeFor(cfg *Config, kc *kube.Client) (*kube.Client, error) {
	if kc != nil {
		return kc, nil
	}
	var users []string
	if cfg.AgentRuntime.Discovery.Enabled {
		users = append(users, "agentRuntime.discovery")
	}
	if cfg.Auth.Session.SignOutConfigMap != "" {
		users = append(users, "auth.session.signOutConfigMap")
	}
	if len(users) == 0 {
		return nil, nil
	}
	kc, err := kube.New(cfg.Kubernetes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(users, " and "), err)
	}
	return kc, nil
}

// startDiscovery starts watching the agents' EndpointSlices when
// agentRuntime.discovery is enabled (nil otherwise), with kc (kubeFor).
func startDiscovery(cfg *Config, kc *kube.Client, svc *mgmt.Service, log hclog.Logger) (*discovery.Discoverer, error) {
	if !cfg.AgentRuntime.Discovery.Enabled {
		return nil, nil
	}
	log.Info("discovering agents", "namespace", kc.Namespace, "label", cfg.AgentRuntime.Discovery.Label())
	return discovery.Start(context.Background(), discovery.Options{
		Client: kc, Config: cfg.AgentRuntime.Discovery, Sink: svc, Logger: log.Named("discovery"),
	})
}

// readiness is what /readyz waits for: the shared sign-outs merged into
// the store and discovery's first list in the registry (a replica with an
// empty registry would answer "no such agent"); nil when neither is on.
func readiness(shared *signouts.Shared, disc *discovery.Discoverer) func() bool {
	if shared == nil && disc == nil {
		return nil
	}
	return func() bool { return (shared == nil || shared.Ready()) && (disc == nil || disc.HasSynced()) }
}

// signOuter is shared as the HTTP layer's SignOuter: nil when there is
// none (a nil *Shared must not become a non-nil interface).
func signOuter(shared *signouts.Shared) httpapi.SignOuter {
	if shared == nil {
		return nil
	}
	return shared
}

// sharedSignOuts builds the sign-out list shared through the ConfigMap of
// auth.session.signOutConfigMap with kc (kubeFor); nil without one:
// sign-outs stay in this process.
func sharedSignOuts(cfg *Config, kc *kube.Client, store *session.Store, log hclog.Logger, reg *prometheus.Registry, now func() time.Time) (*signouts.Shared, error) {
	name := cfg.Auth.Session.SignOutConfigMap
	if name == "" {
		return nil, nil
	}
	return signouts.New(signouts.Options{
		Client: kc, Name: name, Store: store, Logger: log.Named("signouts"), Registerer: reg, Now: now,
	})
}

// sidecarTLS loads agentRuntime.sidecarTLS (nil when it is not set: no
// agent has a sidecar, Validate saw to that).
func sidecarTLS(cfg *Config, log hclog.Logger) (*pki.Source, error) {
	t := cfg.AgentRuntime.SidecarTLS
	if t == nil {
		return nil, nil
	}
	src, err := pki.NewSource(pki.Files{Cert: t.CertFile, Key: t.KeyFile, CA: t.CAFile}, log.Named("tls"), nil)
	if err != nil {
		return nil, fmt.Errorf("agentRuntime.sidecarTLS: %w", err)
	}
	return src, nil
}

// Handler is the main HTTP handler (tests).
func (g *Gateway) Handler() http.Handler { return g.handler }

// Run listens on httpServer.address (and metricsServer.address when set),
// logs one "listening" line per listener, and serves until ctx is done.
func (g *Gateway) Run(ctx context.Context) error {
	defer g.svc.Close()
	defer g.disc.Stop() // nil-safe
	defer g.audit.Close()
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", g.cfg.HTTPServer.Address)
	if err != nil {
		return fmt.Errorf("httpServer.address: %w", err)
	}
	hs := g.cfg.HTTPServer
	// net/http's own server messages (accept errors, panics) go into the
	// gateway's JSON log.
	errLog := g.log.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	// No ReadTimeout or WriteTimeout: they would cut long uploads and
	// downloads. Bodies are bounded by httpapi's body deadlines instead.
	servers := []*http.Server{{Handler: g.handler, ReadHeaderTimeout: hs.ReadHeader(), IdleTimeout: hs.Idle(), ErrorLog: errLog}}
	listeners := []net.Listener{ln}
	names := []string{"http"}
	if addr := g.cfg.MetricsServer.Address; addr != "" {
		mln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("metricsServer.address: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(g.reg, promhttp.HandlerOpts{}))
		ok := func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"status":"ok"}`))
		}
		mux.HandleFunc("GET /healthz", ok)
		mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
			if g.ready != nil && !g.ready() {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"status":"starting"}`))
				return
			}
			ok(w, r)
		})
		servers = append(servers, &http.Server{Handler: mux, ReadHeaderTimeout: hs.ReadHeader(), IdleTimeout: hs.Idle(), ErrorLog: errLog})
		listeners = append(listeners, mln)
		names = append(names, "metrics")
	}
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		g.log.Info("listening", "server", names[i], "address", listeners[i].Addr().String())
		go func(srv *http.Server, ln net.Listener) {
			errc <- srv.Serve(ln)
		}(srv, listeners[i])
	}
	if g.signOut != nil {
		g.signOut.Start()
		defer g.signOut.Close()
	}
	var runErr error
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			runErr = err
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	close(g.stop)
	for _, srv := range servers {
		_ = srv.Shutdown(sctx)
	}
	g.log.Info("stopped")
	return runErr
}
