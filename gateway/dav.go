package gateway

import (
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentworkspace/files/gateway/internal/audit"
)

// newDAV builds the WebDAV view. TODO(davproxy): wire davproxy.New once the
// package compiles; until then /dav/ answers 501.
func newDAV(cfg *Config, log hclog.Logger, reg prometheus.Registerer, al *audit.Logger, now func() time.Time) (http.Handler, error) {
	return nil, nil
}
