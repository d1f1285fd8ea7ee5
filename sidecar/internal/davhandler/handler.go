// Package davhandler serves the sidecar's WebDAV view of one agent's volumes.
//
// It is a thin handler around golang.org/x/net/webdav: the lock system is
// webdav.NewMemLS and PROPPATCH goes to webdav.Handler over davfs's
// webdav.FileSystem, while the methods where plain x/net/webdav is unsafe or
// wrong are answered here directly over the davfs API.
package davhandler

import (
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentworkspace/files/davfs"
)

// Options configures New. Zero values take safe defaults.
type Options struct {
	// Logger receives one line per request (never content). Nil: a null logger.
	Logger hclog.Logger
	// Registerer receives the handler's metrics. Nil: metrics are not registered.
	Registerer prometheus.Registerer
	// MaxUploadSize bounds a PUT body (413 above it). 0: 100 MiB.
	MaxUploadSize int64
	// MaxLockTimeout caps the timeout a LOCK may ask for. 0: 1 hour.
	MaxLockTimeout time.Duration
	// Now is the clock for locks. Nil: time.Now.
	Now func() time.Time
}

// New returns the WebDAV handler over fs.
func New(fs *davfs.FS, opts Options) http.Handler {
	return &handler{fs: fs, opts: opts}
}

type handler struct {
	fs   *davfs.FS
	opts Options
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "not implemented", http.StatusNotImplemented)
}
