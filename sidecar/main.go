package sidecar

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
)

// Main is the whole of cmd/agent-sidecar: flags -> LoadConfig -> Validate ->
// New -> Run under signal.NotifyContext(SIGINT, SIGTERM). It returns the exit
// status.
func Main(args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("agent-sidecar", flag.ContinueOnError)
	fl.SetOutput(stderr)
	configPath := fl.String("config", "", "YAML configuration `file` (required)")
	shutdown := fl.Duration("shutdown-timeout", DefaultShutdownTimeout, "how long to drain in-flight requests on SIGTERM")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *configPath == "" || fl.NArg() > 0 {
		fmt.Fprintln(stderr, "agent-sidecar: usage: agent-sidecar --config FILE")
		return 2
	}
	cfg, err := LoadConfig(*configPath)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(stderr, "agent-sidecar: invalid configuration: %s\n", line)
		}
		return 2
	}
	log := NewLogger(cfg.Log, stderr)
	s, err := New(cfg, Deps{Logger: log, ShutdownTimeout: *shutdown})
	if err != nil {
		log.Error("start failed", "error", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := s.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("stopped with error", "error", err)
		return 1
	}
	return 0
}
