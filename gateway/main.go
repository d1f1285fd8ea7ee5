package gateway

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc/grpclog"

	"github.com/agentworkspace/files/internal/pki"
)

// Main is the whole of cmd/agent-gateway: "agent-gateway --config FILE"
// serves; "agent-gateway certs --dir DIR --agent ID..." makes the mutual-TLS
// files (Certs). It returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "certs" {
		return Certs(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("agent-gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "path to the YAML configuration file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *path == "" {
		fmt.Fprintln(stderr, "agent-gateway: --config FILE is required (or: agent-gateway certs --dir DIR --agent ID)")
		return 2
	}
	cfg, err := LoadConfig(*path)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(stderr, "agent-gateway: config:", strings.TrimPrefix(line, "config: "))
		}
		return 2
	}
	// grpc-go's own log names dial targets and peer addresses in most of
	// its lines (GRPC_GO_LOG_SEVERITY_LEVEL turns them on); no log line of
	// the gateway may name a sidecar endpoint, and every sidecar failure is
	// reported by the gateway itself (agent, code, reason), so it is off.
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
	log := hclog.New(&hclog.LoggerOptions{Name: "agent-gateway", Output: stderr, JSONFormat: true, Level: hclog.Info})
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	g, err := New(cfg, Deps{Logger: log, Registry: reg})
	if err != nil {
		log.Error("start failed", "error", err.Error())
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := g.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("server failed", "error", err.Error())
		return 1
	}
	return 0
}

// agentList is a repeatable --agent flag.
type agentList []string

func (a *agentList) String() string     { return strings.Join(*a, ",") }
func (a *agentList) Set(v string) error { *a = append(*a, v); return nil }

// Certs is "agent-gateway certs --dir DIR --agent ID [--agent ID...]": it
// makes DIR hold a per-install CA, the gateway's client certificate and a
// serving certificate per agent's sidecar (internal/pki Ensure), writing
// only what is missing, and prints the names of the files it wrote (never
// their content).
func Certs(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agent-gateway certs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "directory for ca.crt, ca.key, gateway.crt/.key, sidecar-<agent>.crt/.key")
	var agents agentList
	fs.Var(&agents, "agent", "agent id to issue a sidecar certificate for (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "agent-gateway: usage: agent-gateway certs --dir DIR --agent ID [--agent ID...]")
		return 2
	}
	created, err := pki.Ensure(*dir, agents, time.Now())
	for _, name := range created {
		fmt.Fprintln(stdout, "created", name)
	}
	if err != nil {
		fmt.Fprintln(stderr, "agent-gateway: certs:", err)
		return 1
	}
	if len(created) == 0 {
		fmt.Fprintln(stdout, "nothing to do: every file exists")
	}
	return 0
}
