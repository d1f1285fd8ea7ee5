package pki

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"
)

// Defaults of ListenOptions.
const (
	DefaultHandshakeTimeout     = 10 * time.Second
	DefaultMaxPendingHandshakes = 64
)

// ListenOptions tune Listen. Zero values take the defaults.
type ListenOptions struct {
	// HandshakeTimeout bounds one handshake.
	HandshakeTimeout time.Duration
	// MaxPending bounds the handshakes in progress; a connection beyond it
	// is closed at once (and reported as a handshake refusal).
	MaxPending int
	// OnRefused is called once per refused connection with its Reason.
	OnRefused func(reason string)
}

// Listener hands out only connections whose TLS handshake succeeded (a
// *tls.Conn, handshake done). Each handshake runs in its own goroutine, so
// a slow or silent peer holds up nobody else.
type Listener struct {
	inner net.Listener
	cfg   *tls.Config
	opts  ListenOptions

	conns   chan net.Conn
	pending chan struct{} // a slot per handshake in progress
	done    chan struct{}
	once    sync.Once
	err     error // the inner Accept's error, set (once) before done is closed
}

// Listen wraps inner: cfg is the server config (ServerConfig).
func Listen(inner net.Listener, cfg *tls.Config, opts ListenOptions) *Listener {
	if opts.HandshakeTimeout <= 0 {
		opts.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPendingHandshakes
	}
	if opts.OnRefused == nil {
		opts.OnRefused = func(string) {}
	}
	l := &Listener{inner: inner, cfg: cfg, opts: opts, conns: make(chan net.Conn),
		pending: make(chan struct{}, opts.MaxPending), done: make(chan struct{})}
	go l.acceptLoop()
	return l
}

func (l *Listener) acceptLoop() {
	for {
		c, err := l.inner.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			l.once.Do(func() { l.err = err; close(l.done) })
			return
		}
		select {
		case l.pending <- struct{}{}:
			go l.handshake(c)
		default:
			c.Close()
			l.opts.OnRefused(ReasonHandshake)
		}
	}
}

func (l *Listener) handshake(c net.Conn) {
	defer func() { <-l.pending }()
	tc := tls.Server(c, l.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.HandshakeTimeout)
	defer cancel()
	_ = c.SetDeadline(time.Now().Add(l.opts.HandshakeTimeout))
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		l.opts.OnRefused(Reason(err))
		return
	}
	_ = c.SetDeadline(time.Time{})
	select {
	case l.conns <- tc:
	case <-l.done:
		tc.Close()
	}
}

// Accept returns the next connection whose handshake succeeded.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		if l.err != nil {
			return nil, l.err
		}
		return nil, net.ErrClosed
	}
}

// Close closes the inner listener; handshakes in progress end with it.
func (l *Listener) Close() error {
	err := l.inner.Close()
	l.once.Do(func() { close(l.done) })
	return err
}

// Addr is the inner listener's address.
func (l *Listener) Addr() net.Addr { return l.inner.Addr() }
