package httpapi

import (
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// Request bodies are read under deadlines, so a client cannot hold a
// connection (and a goroutine) open by trickling a body:
//
//   - Until a request is authenticated, its whole body must arrive within
//     Options.BodyReadTimeout of the handler starting: the login body, and
//     whatever an unauthenticated client sends before its 401 (net/http
//     reads up to 256 KiB of an unread body after the response to keep the
//     connection, under the same deadline).
//   - Once requireAdmin has authenticated it, every Read of the body must
//     make progress within Options.BodyIdleTimeout: a large WebDAV upload
//     is never cut while bytes keep arriving, however long it takes.
//
// The headers are bounded by the http.Server's ReadHeaderTimeout (package
// gateway). Requests without a body get no deadline: net/http's background
// read, which notices a client going away, is already running for them and
// a deadline there would cancel a slow handler's context.
//
// The deadline is the connection's (http.ResponseController.SetReadDeadline),
// cleared when the body ends, for the same reason.

// bodyDeadline installs the deadline body; outermost middleware.
func (s *Server) bodyDeadline(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if s.opts.BodyReadTimeout <= 0 || r.Body == nil || r.Body == http.NoBody {
			return next(c)
		}
		rc := http.NewResponseController(c.Response().Writer)
		if rc.SetReadDeadline(time.Now().Add(s.opts.BodyReadTimeout)) != nil {
			return next(c) // not a connection (tests with a recorder)
		}
		// A shallow copy: net/http keeps looking at its own request's Body
		// to learn whether the client waits for "100 Continue"; replacing
		// it there made the server read the body before answering.
		r2 := *r
		r2.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		c.SetRequest(&r2)
		return next(c)
	}
}

// authenticatedBody switches r's body, once its sender is authenticated, to
// per-read deadlines of idle.
func authenticatedBody(r *http.Request, idle time.Duration) {
	if b, ok := r.Body.(*deadlineBody); ok && idle > 0 {
		b.idle = idle
	}
}

// deadlineBody is a request body read under the connection's read
// deadline. Reads happen on one goroutine at a time (the handler's, or a
// proxy transport's after the handler handed the body over), after
// authenticatedBody.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration // 0: the absolute deadline set at the start stays
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if b.idle > 0 && !b.done {
		_ = b.rc.SetReadDeadline(time.Now().Add(b.idle))
	}
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
