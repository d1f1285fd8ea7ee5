// Package sidecar is the agent-sidecar: one process beside an agent pod that
// serves the agent's volumes through davfs on three loopback-or-cluster
// listeners: the gRPC WorkspaceService (rpcServer), WebDAV (davServer) and
// /metrics, /healthz, /readyz (metricsServer).
//
// rpcServer and davServer serve only mutual TLS (internal/pki, config key
// tls): a connection is handed to gRPC or WebDAV only once its handshake
// proved the gateway's client certificate, so the agent beside the sidecar
// (same network namespace) is refused before any request byte is read, and
// the headers the gateway vouches for (x-operator, X-Workspace-Unconditional-Writes,
// X-Forwarded-Prefix) rest on that credential. metricsServer stays plain
// HTTP for the kubelet's probes and Prometheus; it serves no files.
//
// It never initialises, cleans or rewrites existing content at start: davfs
// only ensures $CODEX_HOME/skills exists and sweeps its own temp files.
package sidecar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/checkpoint"
	"github.com/agentworkspace/files/davfs/usage"
	"github.com/agentworkspace/files/davfs/watch"
	"github.com/agentworkspace/files/internal/pki"
	"github.com/agentworkspace/files/sidecar/internal/dav"
	"github.com/agentworkspace/files/sidecar/internal/feature"
	"github.com/agentworkspace/files/sidecar/internal/gitinit"
	"github.com/agentworkspace/files/sidecar/internal/metrics"
	"github.com/agentworkspace/files/sidecar/internal/rpc"
)

// DefaultShutdownTimeout bounds how long Run drains in-flight requests after
// its context ends (below Kubernetes' default 30 s grace period).
const DefaultShutdownTimeout = 25 * time.Second

// Deps are what New needs besides the Config. Zero values take defaults.
type Deps struct {
	// Logger is the root logger. Nil: an hclog logger built from cfg.Log
	// writing to os.Stderr.
	Logger hclog.Logger
	// Registry receives every metric and is served on /metrics. Nil: a new
	// registry with the Go and process collectors.
	Registry *prometheus.Registry
	// Initializer overrides the git init of CreateProject (tests).
	Initializer davfs.ProjectInitializer
	// ShutdownTimeout bounds the drain after the context ends. 0: DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// RetryMinBackoff and RetryMaxBackoff bound the retries of a feature
	// that cannot start (features.go). 0: 1 s and 1 min.
	RetryMinBackoff, RetryMaxBackoff time.Duration
	// Now and After are the clock of those retries. Nil: time.Now, time.After.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

// Sidecar is a configured, not yet listening sidecar.
type Sidecar struct {
	cfg      Config
	deps     Deps
	log      hclog.Logger
	fs       *davfs.FS
	ck       *checkpoint.Store // beside fs: always set, CHECKPOINTS_DISABLED without a store
	registry *prometheus.Registry
	grpc     *grpc.Server
	health   *health.Server
	dav      http.Handler
	watcher  atomic.Pointer[watch.Watcher] // live changes (watch.go); nil while it cannot start
	usage    *usage.Cache                  // workspace totals (usage.go)
	// checkpoints (nil when not configured) and watch supervise the
	// optional features (features.go).
	checkpoints, watch *feature.Feature
	metrics            *metrics.Metrics
	tls                *pki.Source // rpc and dav serving certificate, gateway CA
	ready              atomic.Bool
}

// NewLogger builds the hclog logger cfg.Log describes.
func NewLogger(cfg LogConfig, w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "agent-sidecar",
		Level:      hclog.LevelFromString(strings.ToLower(cfg.Level)),
		JSONFormat: cfg.Format != "text",
		Output:     w,
		TimeFormat: time.RFC3339Nano,
	})
}

// New validates cfg, opens the volumes through davfs and builds the servers.
// It binds no listener; Run does.
func New(cfg Config, deps Deps) (*Sidecar, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Logger == nil {
		deps.Logger = NewLogger(cfg.Log, os.Stderr)
	}
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
		deps.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if deps.ShutdownTimeout <= 0 {
		deps.ShutdownTimeout = DefaultShutdownTimeout
	}
	s := &Sidecar{cfg: cfg, deps: deps, log: deps.Logger, registry: deps.Registry}
	cfg.Services.Checkpoints.warnPlacement(s.log, cfg.Services.Project)

	m, err := metrics.New(deps.Registry)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	s.metrics = m
	for _, server := range []string{"rpc", "dav"} {
		m.InitPeerRefused(server, pki.Reasons()...)
	}
	t := cfg.TLS
	if s.tls, err = pki.NewSource(pki.Files{Cert: t.CertFile, Key: t.KeyFile, CA: t.ClientCAFile}, s.log.Named("tls"), nil); err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	initMethods(m)

	p := cfg.Services.Project
	if err := s.openVolumes(cfg, deps, m); err != nil {
		return nil, err
	}
	fs, ck := s.fs, s.ck
	s.usage = usage.NewCache(fs, usage.Config{})
	if err := s.registerUsageMetrics(); err != nil {
		s.close()
		return nil, err
	}

	s.grpc = s.newGRPCServer(m, p.MaxEditableFileSize)
	workspacev1.RegisterWorkspaceServiceServer(s.grpc, rpc.NewService(fs, ck).WithSearch(fs).WithUsage(s.usage))
	workspacev1.RegisterCheckpointServiceServer(s.grpc, rpc.NewCheckpointService(ck))
	if err := s.registerWatchMetrics(); err != nil {
		s.close()
		return nil, err
	}
	// Neither the store nor the watcher can fail the start (features.go).
	s.newFeatures(m)
	workspacev1.RegisterWatchServiceServer(s.grpc, rpc.NewWatchService(s.currentWatcher))
	s.registerHealth()

	s.dav = dav.New(fs, ck, dav.Options{
		Logger:                   s.log.Named("dav"),
		Registerer:               deps.Registry,
		MaxUploadSize:            p.MaxUploadSize,
		AllowUnconditionalWrites: cfg.DavServer.AllowUnconditionalWrites,
		MaxLocksPerOperator:      cfg.DavServer.MaxLocksPerOperator,
		MaxLockTimeout:           cfg.DavServer.lockTimeout(),
		Usage:                    s.usage,
	})
	return s, nil
}

// openVolumes opens the volumes through davfs and the checkpoint store
// beside them (its name denied as a Project when it sits under the projects
// root), and registers the store's figures.
func (s *Sidecar) openVolumes(cfg Config, deps Deps, m *metrics.Metrics) error {
	initializer := s.countedInitializer(deps.Initializer, m)
	p := cfg.Services.Project
	ckCfg := cfg.Services.Checkpoints.store(p)
	denied := append([]string(nil), p.DeniedDirectories...)
	if n := checkpoint.DeniedName(ckCfg.Dir, p.ProjectsRootDir); n != "" {
		denied = append(denied, n) // the store is never a Project
	}
	fs, err := davfs.Open(davfs.Config{
		ProjectsRoot:        p.ProjectsRootDir,
		CodexHome:           p.CodexHomeDir,
		MaxEditableFileSize: p.MaxEditableFileSize,
		MaxUploadSize:       p.MaxUploadSize,
		MaxPageSize:         p.MaxPageSize,
		MaxPathLength:       p.MaxPathLength,
		MaxPathDepth:        p.MaxPathDepth,
		DeniedNames:         denied,
		Initializer:         initializer,
		Logger:              s.log.Named("davfs"),
	})
	if err != nil {
		return fmt.Errorf("open volumes: %w", err)
	}
	s.fs = fs
	ck, err := checkpoint.New(fs, ckCfg, checkpoint.Options{Logger: s.log.Named("davfs"), Observer: m.Checkpoints.Observe})
	if err != nil {
		fs.Close()
		return fmt.Errorf("open volumes: %w", err)
	}
	s.ck = ck
	if err := m.Checkpoints.RegisterStore(deps.Registry, ck.CheckpointStats); err != nil {
		s.close()
		return fmt.Errorf("metrics: %w", err)
	}

	return nil
}

// close releases the checkpoint store's fds, then the volumes'.
func (s *Sidecar) close() {
	s.ck.Close()
	s.fs.Close()
}

// countedInitializer is the project initializer (inner, or git init when
// nil) with every failed init counted, an injected initializer's too.
func (s *Sidecar) countedInitializer(inner davfs.ProjectInitializer, m *metrics.Metrics) davfs.ProjectInitializer {
	if inner == nil {
		inner = gitinit.New(gitinit.Options{Logger: s.log.Named("gitinit")})
	}
	return func(ctx context.Context, dir string) error {
		err := inner(ctx, dir)
		if err != nil {
			m.GitInitFailed()
		}
		return err
	}
}

// registerHealth registers the gRPC health service, not serving until Run
// has bound the listeners.
func (s *Sidecar) registerHealth() {
	s.health = health.NewServer()
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	s.health.SetServingStatus(workspacev1.WorkspaceService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(s.grpc, s.health)
}

// initMethods makes every gRPC method's and stream's figures exist from
// the start.
func initMethods(m *metrics.Metrics) {
	for _, md := range slices.Concat(workspacev1.WorkspaceService_ServiceDesc.Methods, workspacev1.CheckpointService_ServiceDesc.Methods) {
		m.Init(md.MethodName)
	}
	for _, sd := range workspacev1.WatchService_ServiceDesc.Streams {
		m.Init(sd.StreamName)
	}
}

// newGRPCServer builds the gRPC server, its interceptors and its message
// and window sizes for files up to maxEditable bytes; no service is
// registered yet.
func (s *Sidecar) newGRPCServer(m *metrics.Metrics, maxEditable int64) *grpc.Server {
	// gRPC messages carry whole editable files; leave room for the envelope.
	maxMsg := max(int(maxEditable)+1<<20, 4<<20)
	win := min(maxMsg, 16<<20)
	return grpc.NewServer(
		// The listener did the handshake (authenticatedListener).
		grpc.Creds(pki.HandshakenCredentials()),
		grpc.ChainUnaryInterceptor(rpc.Interceptor(s.log.Named("rpc"), kickObserver{m, s}), usageInterceptor(s.usage)),
		// The Watch stream: the same request ID, operator, log line, metrics
		// and panic recovery as the unary calls.
		grpc.ChainStreamInterceptor(rpc.StreamInterceptor(s.log.Named("rpc"), kickObserver{m, s})),
		grpc.MaxRecvMsgSize(maxMsg),
		grpc.MaxSendMsgSize(maxMsg),
		// Fixed flow-control windows as large as a whole message: a call
		// never waits for a window update, and grpc-go's bandwidth
		// estimation (on by default, off with a fixed window) no longer
		// answers every received request with a PING the client must
		// acknowledge, an extra round trip per call on the caller's side.
		grpc.InitialWindowSize(int32(win)),
		grpc.InitialConnWindowSize(int32(2*win)),
	)
}

// Run binds the three listeners, logs one "listening" line for each (fields
// server=rpc|dav|metrics and address=host:port), serves until ctx ends, then
// drains in-flight gRPC calls (GracefulStop) and HTTP requests (Shutdown)
// for at most the shutdown timeout before cutting them off, and closes the
// volumes. An interrupted write commits nothing (davfs writes atomically).
func (s *Sidecar) Run(ctx context.Context) error {
	defer s.close()
	davSrv := s.httpServer("dav", s.dav, 30*time.Second, 5*time.Minute)
	metricsSrv := s.httpServer("metrics", s.metricsMux(), 10*time.Second, 0)
	servers := []struct {
		name, addr string
		serve      func(net.Listener) error
	}{
		{"rpc", s.cfg.RPCServer.Address, s.grpc.Serve},
		{"dav", s.cfg.DavServer.Address, davSrv.Serve},
		{"metrics", s.cfg.MetricsServer.Address, metricsSrv.Serve},
	}
	lns := make([]net.Listener, len(servers))
	for i, sv := range servers {
		l, err := net.Listen("tcp", sv.addr)
		if err != nil {
			for _, l := range lns[:i] {
				l.Close()
			}
			s.closeWatcher()
			return fmt.Errorf("%sServer.address: listen: %w", sv.name, err)
		}
		lns[i] = s.authenticatedListener(sv.name, l)
		s.log.Info("listening", "server", sv.name, "address", l.Addr().String())
	}

	errc := make(chan error, len(servers))
	var wg sync.WaitGroup
	for i, sv := range servers {
		wg.Go(func() {
			if err := sv.serve(lns[i]); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, grpc.ErrServerStopped) {
				errc <- fmt.Errorf("%s server: %w", sv.name, err)
			}
		})
	}

	// Features that could not start are retried until they do.
	fctx, fstop := context.WithCancel(ctx)
	var fwg sync.WaitGroup
	for _, f := range s.features() {
		fwg.Go(func() { f.Run(fctx) })
	}

	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(workspacev1.WorkspaceService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	s.ready.Store(true)
	s.log.Info("ready")

	var runErr error
	select {
	case <-ctx.Done():
		s.log.Info("shutting down", "cause", context.Cause(ctx).Error(), "timeout", s.deps.ShutdownTimeout.String())
	case runErr = <-errc:
		s.log.Error("server failed, shutting down", "error", runErr)
	}
	s.ready.Store(false)
	s.health.Shutdown()
	// Watch streams never end by themselves: end them so the drain is quick.
	fstop()
	fwg.Wait()
	s.closeWatcher()

	s.drain(davSrv)
	mctx, mcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer mcancel()
	if err := metricsSrv.Shutdown(mctx); err != nil {
		metricsSrv.Close()
	}
	wg.Wait()
	s.log.Info("stopped")
	return runErr
}

// drain lets in-flight gRPC calls and WebDAV requests finish, together, for
// at most the shutdown timeout, then cuts off what is left.
func (s *Sidecar) drain(davSrv *http.Server) {
	sctx, cancel := context.WithTimeout(context.Background(), s.deps.ShutdownTimeout)
	defer cancel()
	var dwg sync.WaitGroup
	dwg.Go(func() {
		done := make(chan struct{})
		go func() { s.grpc.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-sctx.Done():
			s.log.Warn("gRPC drain timed out; cancelling in-flight calls")
			s.grpc.Stop()
		}
	})
	dwg.Go(func() {
		if err := davSrv.Shutdown(sctx); err != nil {
			s.log.Warn("WebDAV drain timed out; closing connections", "error", err)
			davSrv.Close()
		}
	})
	dwg.Wait()
}

// authenticatedListener wraps the rpc and dav listeners (metrics stays
// plain): Accept hands out only connections whose mutual-TLS handshake
// proved the gateway's certificate. A refusal is counted and logged with
// the server and reason only (a line per reason every 10 s at most).
func (s *Sidecar) authenticatedListener(server string, l net.Listener) net.Listener {
	protos := map[string][]string{"rpc": pki.ProtoGRPC, "dav": pki.ProtoHTTP}[server]
	if protos == nil {
		return l
	}
	log := s.log.Named(server)
	limit := &refusalLog{last: map[string]time.Time{}, suppressed: map[string]int{}}
	return pki.Listen(l, s.tls.ServerConfig(pki.GatewayURI, protos), pki.ListenOptions{
		OnRefused: func(reason string) {
			s.metrics.PeerRefused(server, reason)
			if ok, suppressed := limit.allow(reason, time.Now()); ok {
				log.Warn("peer refused at the TLS handshake", "server", server, "reason", reason, "suppressed", suppressed)
			}
		},
	})
}

// refusalLog lets one refusal line per reason through every
// refusalLogInterval, so that a peer that reconnects in a loop cannot
// flood the log; the metric counts every refusal.
type refusalLog struct {
	mu         sync.Mutex
	last       map[string]time.Time
	suppressed map[string]int
}

const refusalLogInterval = 10 * time.Second

// allow reports whether to log a refusal for reason now, and how many were
// left unlogged since the last line.
func (r *refusalLog) allow(reason string, now time.Time) (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if last, ok := r.last[reason]; ok && now.Sub(last) < refusalLogInterval {
		r.suppressed[reason]++
		return false, 0
	}
	n := r.suppressed[reason]
	r.last[reason], r.suppressed[reason] = now, 0
	return true, n
}

// httpServer is the dav or metrics server; its error log is the named logger.
func (s *Sidecar) httpServer(name string, h http.Handler, readHeader, idle time.Duration) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeader,
		IdleTimeout:       idle,
		ErrorLog:          s.log.Named(name).StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
}

func (s *Sidecar) metricsMux() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{
		ErrorLog: s.log.Named("metrics").StandardLogger(nil),
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", s.readyz) // features.go
	return mux
}
