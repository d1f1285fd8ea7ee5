package sidecar

import (
	"net/http"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/sidecar/internal/dav"
)

// newDAVHandler is the one place the WebDAV handler is wired in.
func newDAVHandler(fs *davfs.FS, log hclog.Logger, reg prometheus.Registerer, cfg Config) http.Handler {
	return dav.New(fs, dav.Options{
		Logger:                   log,
		Registerer:               reg,
		MaxUploadSize:            cfg.Services.Project.MaxUploadSize,
		AllowUnconditionalWrites: cfg.DavServer.AllowUnconditionalWrites,
	})
}
