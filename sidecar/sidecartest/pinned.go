package sidecartest

import (
	"strings"
	"time"

	"github.com/agentworkspace/files/internal/proctest"
	"github.com/agentworkspace/files/sidecar"
)

// RestartSamePorts stops the process (SIGKILL when kill, else SIGTERM) and
// starts it again on the same three loopback addresses, so that a gateway
// configured with the old endpoints reaches it again (a pod restart behind
// a Service). It retries while the ports are still being released.
func (s *Sidecar) RestartSamePorts(kill bool) {
	s.t.Helper()
	s.stopForRestart(kill)
	cfg, err := sidecar.LoadConfig(s.ConfigPath)
	if err != nil {
		s.t.Fatalf("sidecartest: %v", err)
	}
	cfg.RPCServer.Address = s.RPCAddr
	cfg.DavServer.Address = strings.TrimPrefix(s.DavURL, "http://")
	cfg.MetricsServer.Address = strings.TrimPrefix(s.MetricsURL, "http://")
	proctest.WriteYAML(s.t, s.ConfigPath, cfg, 0o644)
	for i := 0; ; i++ {
		err := s.start()
		if err == nil {
			return
		}
		if i >= 40 {
			s.t.Fatalf("sidecartest: restart on the same ports: %v\nlogs:\n%s", err, s.logs.Tail(100))
		}
		time.Sleep(250 * time.Millisecond)
	}
}
