package config

// Limits caps what one agent's clients may hold open in the gateway (issue
// #23): a client over a cap gets a clear refusal with a reason, never a
// slow gateway for everyone.
type Limits struct {
	// UploadsPerAgent bounds the request bodies in flight to one agent's
	// WebDAV view (PUT uploads, and any other request that carries a body):
	// a request over it is answered 429 TOO_MANY_UPLOADS with Retry-After
	// before its body is read or anything reaches the sidecar. A slot is
	// held until the body is read to its end (or the request ends), so
	// trickling bodies cannot pile up (httpServer.bodyIdleTimeout bounds
	// each of them). Nil: DefaultUploadsPerAgent.
	UploadsPerAgent *int `yaml:"uploadsPerAgent,omitempty"`
}

// DefaultUploadsPerAgent is limits.uploadsPerAgent's default: more than a
// sync client's parallel transfers (rclone's --transfers is 4), far below
// what trickling bodies need to exhaust the gateway's file descriptors.
const DefaultUploadsPerAgent = 16

// maxUploadsPerAgent keeps a typo from disabling the cap.
const maxUploadsPerAgent = 4096

// Uploads is limits.uploadsPerAgent or its default.
func (l Limits) Uploads() int {
	if l.UploadsPerAgent == nil {
		return DefaultUploadsPerAgent
	}
	return *l.UploadsPerAgent
}

func (l Limits) validate(bad func(key, format string, args ...any)) {
	if n := l.Uploads(); n < 1 || n > maxUploadsPerAgent {
		bad("limits.uploadsPerAgent", "must be between 1 and %d (got %d)", maxUploadsPerAgent, n)
	}
}
