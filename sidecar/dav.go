package sidecar

import (
	"net/http"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/sidecar/internal/davhandler"
)

// newDAVHandler is the one place the WebDAV handler is wired in.
func newDAVHandler(fs *davfs.FS, log hclog.Logger, reg prometheus.Registerer, maxUpload int64) http.Handler {
	return davhandler.New(fs, davhandler.Options{Logger: log, Registerer: reg, MaxUploadSize: maxUpload})
}
