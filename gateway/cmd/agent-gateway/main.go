// Command agent-gateway is the Agent Workspace Files gateway: it
// authenticates admins and routes REST, WebDAV and portal traffic to each
// agent's sidecar. Usage: agent-gateway --config FILE.
package main

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

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc/grpclog"

	"github.com/agentworkspace/files/gateway"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := flag.NewFlagSet("agent-gateway", flag.ContinueOnError)
	path := fs.String("config", "", "path to the YAML configuration file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *path == "" {
		fmt.Fprintln(os.Stderr, "agent-gateway: --config FILE is required")
		return 2
	}
	cfg, err := gateway.LoadConfig(*path)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(os.Stderr, "agent-gateway: config:", strings.TrimPrefix(line, "config: "))
		}
		return 2
	}
	// grpc-go's own log names dial targets and peer addresses in most of
	// its lines (GRPC_GO_LOG_SEVERITY_LEVEL turns them on); no log line of
	// the gateway may name a sidecar endpoint, and every sidecar failure is
	// reported by the gateway itself (agent, code, reason), so it is off.
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
	log := hclog.New(&hclog.LoggerOptions{Name: "agent-gateway", Output: os.Stderr, JSONFormat: true, Level: hclog.Info})
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	g, err := gateway.New(cfg, gateway.Deps{Logger: log, Registry: reg})
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
