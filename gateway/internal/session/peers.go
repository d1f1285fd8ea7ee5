package session

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
)

// PeerPath is the peer endpoint on the metrics listener: GET returns this
// replica's revocations, POST adds some.
const PeerPath = "/internal/session/revocations"

// Bounds of the peer protocol.
const (
	// SignOutWait is the longest a sign-out response waits for peers to
	// acknowledge; deliveries not done by then go on in the background.
	SignOutWait = time.Second
	// PeerTimeout bounds one peer request (connect, send, answer).
	PeerTimeout = 2 * time.Second
	// SyncTimeout is the longest a starting replica waits for its peers'
	// lists before it reports ready anyway.
	SyncTimeout = 5 * time.Second
	// ResyncInterval is how often a replica pulls its peers' lists again,
	// catching up on sign-outs whose delivery failed.
	ResyncInterval = time.Minute
	// MaxPeerBody bounds a peer request or response body (a full list of
	// DefaultMaxSessions revocations is about 700 KB).
	MaxPeerBody = 2 << 20
	// maxDeliveries bounds the sign-out deliveries in flight; beyond it a
	// delivery is dropped (and the next resync catches up).
	maxDeliveries = 64
	// maxServing bounds the peer requests handled at once (each may hold
	// a body of up to MaxPeerBody); beyond it a signed request gets 503
	// and its sender retries.
	maxServing = 4
	// refusalLogEvery is how often one refusal reason is logged at most:
	// refusals are counted by the metric, the log only says they happen.
	refusalLogEvery = 10 * time.Second
)

// PeerOptions configure Peers.
type PeerOptions struct {
	Store *Store
	// Addrs are the configured auth.session.peers: host:port, the host
	// resolved at each use. Each resolved address must reach one replica
	// (a headless Service names every pod); an address that reaches
	// several (a ClusterIP, a load balancer) delivers each sign-out to
	// whichever replica answers, not to all.
	Addrs []string
	// Keys are the session keys; the peer key is derived from them.
	Keys   [][]byte
	Logger hclog.Logger
	// Registerer receives the peer metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Now is the clock; nil uses time.Now.
	Now func() time.Time
	// Resolver resolves peer host names; nil uses net.DefaultResolver.
	Resolver *net.Resolver
	// RetryDelays are the pauses between the attempts of one delivery;
	// nil uses the default schedule (about 8 s in all).
	RetryDelays []time.Duration
	// Resync is how often the peers' lists are pulled again; 0 uses
	// ResyncInterval.
	Resync time.Duration
}

// Peers shares sign-outs with the other replicas (see the package doc).
type Peers struct {
	store    *Store
	addrs    []string
	auth     *peerAuth
	log      hclog.Logger
	now      func() time.Time
	resolver *net.Resolver
	client   *http.Client
	instance string // random per process: recognises this replica among its peers
	retries  []time.Duration
	resync   time.Duration

	ctx     context.Context // ends at Close: background deliveries stop
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	slots   chan struct{} // maxDeliveries
	serving chan struct{} // maxServing

	mu sync.Mutex
	// self holds the addresses known to be this replica's own listener:
	// the one it is bound to, and local addresses on its port that
	// answered with its instance id. Never any other address, even one
	// that once answered with the id: that may be a proxy in front of
	// several replicas.
	self       map[string]bool
	listenPort string
	logged     map[string]time.Time // refusal reason -> when last logged
	suppressed map[string]int       // refusal reason -> not logged since

	ready atomic.Bool // the start-up sync is over

	sends   *prometheus.CounterVec
	refused *prometheus.CounterVec
}

// NewPeers returns the peer side of store. It needs at least one key.
func NewPeers(o PeerOptions) (*Peers, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	a, err := newPeerAuth(o.Keys, now)
	if err != nil {
		return nil, err
	}
	retries := o.RetryDelays
	if retries == nil {
		// The pauses before each further attempt of a delivery (about 8 s
		// in all); after that the periodic resync takes over.
		retries = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}
	}
	p := &Peers{
		store: o.Store, addrs: o.Addrs, auth: a, log: cmp.Or(o.Logger, hclog.NewNullLogger()), now: now,
		resolver: cmp.Or(o.Resolver, net.DefaultResolver),
		// No proxy: peer traffic stays inside the cluster network. No
		// keep-alive: peer requests are few, and a fresh connection per
		// request lets a retry through an address that proxied to this
		// replica reach another one.
		client:   &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}},
		instance: randomID(idBytes), retries: retries, resync: cmp.Or(max(o.Resync, 0), ResyncInterval),
		slots: make(chan struct{}, maxDeliveries), serving: make(chan struct{}, maxServing),
		self: map[string]bool{}, logged: map[string]time.Time{}, suppressed: map[string]int{},
		sends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_session_peer_deliveries_total", Help: "Sign-outs sent to a peer replica, by outcome (ok, failed after retries, dropped when too many were in flight, unresolved when a peer name did not resolve).",
		}, []string{"result"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_session_peer_refused_total", Help: "Requests to the session peer endpoint refused (403, or 503 when too many were in flight), by reason.",
		}, []string{"reason"}),
	}
	if o.Registerer != nil {
		held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "agent_gateway_session_revocations", Help: "Signed-out sessions remembered until they would have expired.",
		}, func() float64 { return float64(o.Store.Len()) })
		for _, c := range []prometheus.Collector{p.sends, p.refused, held} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, err
			}
		}
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// Close stops background deliveries and resyncs and waits for them.
func (p *Peers) Close() {
	p.cancel()
	p.wg.Wait() // no keep-alive: the client holds no idle connection
}

// Ready reports whether the start-up sync is over (readiness).
func (p *Peers) Ready() bool { return p.ready.Load() }

// revocationJSON is one revocation on the wire.
type revocationJSON struct {
	SID     string `json:"sid"`
	Expires int64  `json:"exp"`
}

type listJSON struct {
	Revocations []revocationJSON `json:"revocations"`
}

func encodeList(revs []Revocation) []byte {
	l := listJSON{Revocations: make([]revocationJSON, len(revs))}
	for i, r := range revs {
		l.Revocations[i] = revocationJSON{SID: r.SID, Expires: r.Expires.Unix()}
	}
	b, _ := json.Marshal(l)
	return b
}

func decodeList(b []byte, max int) ([]Revocation, error) {
	var l listJSON
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, err
	}
	if len(l.Revocations) > max {
		return nil, fmt.Errorf("%d revocations, more than %d", len(l.Revocations), max)
	}
	out := make([]Revocation, len(l.Revocations))
	for i, r := range l.Revocations {
		out[i] = Revocation{SID: r.SID, Expires: time.Unix(r.Expires, 0)}
	}
	return out, nil
}

// --- the endpoint ---

// ServeHTTP serves PeerPath. The headers are checked before any of the body
// is read: anything without a valid signature, with a timestamp outside
// PeerWindow, a nonce already used or malformed peer headers gets 403, adds
// nothing and reads nothing. Only then is the body read, at most
// MaxPeerBody bytes as announced by Content-Length, within PeerTimeout,
// and compared with the signed digest; at most maxServing requests are
// served at once. Refusals are counted; the log line names the reason,
// never a header value, and is rate-limited.
func (p *Peers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The metrics listener has no body deadline of its own; this one
	// also bounds what net/http discards of an unread body.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(PeerTimeout))
	if r.URL.RawQuery != "" {
		p.refuse(w, r, "query string")
		return
	}
	if err := p.auth.verifyRequest(r); err != nil {
		p.refuse(w, r, err.Error())
		return
	}
	nonce := r.Header.Get(headerNonce)
	select {
	case p.serving <- struct{}{}:
		defer func() { <-p.serving }()
	default:
		p.refused.WithLabelValues("too many requests in flight").Inc()
		w.Header().Set("Connection", "close")
		p.reply(w, nonce, http.StatusServiceUnavailable, nil)
		return
	}
	n := r.ContentLength
	if n < 0 || n > MaxPeerBody || (r.Method != http.MethodPost && n != 0) {
		p.refuse(w, r, "body length missing or too large")
		return
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r.Body, body); err != nil {
		p.refuse(w, r, "unreadable body")
		return
	}
	if bodyDigest(body) != r.Header.Get(headerBody) {
		p.refuse(w, r, "body does not match its digest")
		return
	}
	switch r.Method {
	case http.MethodGet:
		p.reply(w, nonce, http.StatusOK, encodeList(p.store.Revocations()))
	case http.MethodPost:
		revs, err := decodeList(body, p.store.Max())
		if err != nil {
			p.log.Warn("session peer request refused", "reason", "malformed revocation list")
			p.reply(w, nonce, http.StatusBadRequest, nil)
			return
		}
		n := p.store.Revoke(revs...)
		if n > 0 {
			p.log.Info("session revocations received from a peer", "added", n)
		}
		p.reply(w, nonce, http.StatusOK, []byte(fmt.Sprintf(`{"added":%d}`, n)))
	default:
		p.reply(w, nonce, http.StatusMethodNotAllowed, nil)
	}
}

// refuse answers 403 and closes the connection (net/http would otherwise
// wait to discard an unread body).
func (p *Peers) refuse(w http.ResponseWriter, r *http.Request, reason string) {
	p.refused.WithLabelValues(reason).Inc()
	if n, ok := p.logRefusal(reason); ok {
		method := "other" // the method is the client's choice, of any length
		if r.Method == http.MethodGet || r.Method == http.MethodPost {
			method = r.Method
		}
		p.log.Warn("session peer request refused", "reason", reason, "method", method, "not_logged_before", n)
	}
	w.Header().Set("Connection", "close")
	http.Error(w, "forbidden", http.StatusForbidden)
}

// logRefusal reports whether a refusal for reason is logged now (at most
// once per refusalLogEvery per reason) and how many were not logged since
// the last line. Reasons are fixed phrases, so the maps stay small.
func (p *Peers) logRefusal(reason string) (int, bool) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if last, ok := p.logged[reason]; ok && now.Sub(last) < refusalLogEvery && now.Sub(last) > -refusalLogEvery {
		p.suppressed[reason]++
		return 0, false
	}
	n := p.suppressed[reason]
	p.logged[reason] = now
	p.suppressed[reason] = 0
	return n, true
}

func (p *Peers) reply(w http.ResponseWriter, nonce string, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	p.auth.signResponse(h, nonce, status, p.instance, body)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// --- the client ---

// errSelf: the address is this replica's own.
var errSelf = errors.New("this replica")

// call sends one signed request to a peer and returns the verified
// response body. Errors never carry the peer's address (see reason).
func (p *Peers) call(ctx context.Context, addr, method string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, PeerTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+PeerPath, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	nonce := p.auth.signRequest(req, p.instance, body)
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, MaxPeerBody+1))
	if err != nil {
		return nil, err
	}
	if len(out) > MaxPeerBody {
		return nil, errPeerAuth("response too large")
	}
	if err := p.auth.verifyResponse(resp, nonce, out); err != nil {
		// A 403 from a replica with other keys is unsigned as well.
		return nil, errPeerAuth(fmt.Sprintf("status %d, %v", resp.StatusCode, err))
	}
	if resp.Header.Get(headerInstance) == p.instance {
		p.noteOwn(addr)
		return nil, errSelf
	}
	if resp.StatusCode != http.StatusOK {
		return nil, errPeerAuth(fmt.Sprintf("status %d", resp.StatusCode))
	}
	return out, nil
}

// reason describes a delivery error for logs without the peer's address
// (net/http's errors quote the URL).
func reason(err error) string {
	var pe errPeerAuth
	var ne net.Error
	switch {
	case errors.As(err, &pe):
		return string(pe)
	case errors.Is(err, errSelf):
		return "answered by this replica (does the peer address reach several replicas?)"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "shutting down"
	default:
		return "unreachable"
	}
}

// noteOwn records addr, which answered with this replica's id, as this
// replica's own when it is its listener: a local interface address on the
// port it listens on. Only such an address is left out of later rounds;
// any other one (a proxy, a Service's virtual IP) may reach another
// replica next time.
func (p *Peers) noteOwn(addr string) {
	host, port, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	p.mu.Lock()
	listen := p.listenPort
	p.mu.Unlock()
	if err != nil || ip == nil || port != listen {
		return
	}
	// The interfaces are listed outside the lock (the peer endpoint's
	// refusals take it), and not at all for a loopback address.
	if !ip.IsLoopback() {
		ifaddrs, err := net.InterfaceAddrs()
		if err != nil || !slices.ContainsFunc(ifaddrs, func(a net.Addr) bool {
			n, ok := a.(*net.IPNet)
			return ok && n.IP.Equal(ip)
		}) {
			return
		}
	}
	p.mu.Lock()
	p.self[addr] = true
	p.mu.Unlock()
}

// isSelf reports whether addr is known to be this replica's own.
func (p *Peers) isSelf(addr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.self[addr]
}

// resolve expands the configured peers to addresses, resolving host names
// now (a headless Service lists every replica), without this replica's
// own address once known.
func (p *Peers) resolve(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	var errs []error
	for _, a := range p.addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			errs = append(errs, errPeerAuth("a peer address is not host:port"))
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, PeerTimeout)
		ips, err := p.resolver.LookupHost(ctx, host) // an IP address comes back as it is
		cancel()
		if err != nil {
			errs = append(errs, errPeerAuth("a peer name did not resolve"))
			continue
		}
		p.mu.Lock()
		for _, ip := range ips {
			addr := net.JoinHostPort(ip, port)
			if !seen[addr] && !p.self[addr] {
				seen[addr] = true
				out = append(out, addr)
			}
		}
		p.mu.Unlock()
	}
	return out, errors.Join(errs...)
}

// SignOut ends the session sealed in a cookie value here and on every
// peer. It returns once every peer acknowledged, SignOutWait passed or ctx
// ended, whichever is first. Resolving the peers and delivering run under
// the peers' own context, not ctx: a client that goes away does not stop
// its sign-out from reaching the other replicas.
func (p *Peers) SignOut(ctx context.Context, value string) {
	rev, ok := p.store.Delete(value)
	if !ok {
		return
	}
	acked := make(chan struct{})
	if !p.inSlot(func() { p.spread(encodeList([]Revocation{rev}), acked) }) {
		return
	}
	wait, cancel := context.WithTimeout(ctx, SignOutWait)
	defer cancel()
	select {
	case <-acked:
	case <-wait.Done():
		p.log.Info("sign-out response sent before every peer acknowledged; retrying in the background")
	}
}

// inSlot runs f in the background on a delivery slot until it returns;
// with no slot free it counts the delivery dropped and does not run f.
func (p *Peers) inSlot(f func()) bool {
	select {
	case p.slots <- struct{}{}:
	default:
		p.sends.WithLabelValues("dropped").Inc()
		p.log.Warn("session sign-out not sent to a peer", "reason", "too many deliveries in flight")
		return false
	}
	p.wg.Go(func() {
		defer func() { <-p.slots }()
		f()
	})
	return true
}

// spread resolves the peers and delivers body to each; it closes acked
// once every first attempt's outcome is known.
func (p *Peers) spread(body []byte, acked chan<- struct{}) {
	defer close(acked)
	addrs, err := p.resolve(p.ctx)
	if err != nil {
		p.sends.WithLabelValues("unresolved").Inc()
		p.log.Warn("session sign-out not sent to every peer; their next resync pulls it", "reason", reason(err))
	}
	var first sync.WaitGroup // the deliveries' first attempts
	for _, addr := range addrs {
		first.Add(1)
		if !p.inSlot(func() { p.deliver(addr, body, first.Done) }) {
			first.Done()
		}
	}
	first.Wait()
}

// deliver sends body to one peer, retrying for a few seconds; it calls
// done once the first attempt's outcome is known.
func (p *Peers) deliver(addr string, body []byte, done func()) {
	signal := sync.OnceFunc(done)
	defer signal()
	var err error
	for attempt := 0; ; attempt++ {
		_, err = p.call(p.ctx, addr, http.MethodPost, body)
		if err == nil {
			p.sends.WithLabelValues("ok").Inc()
			return
		}
		if errors.Is(err, errSelf) && p.isSelf(addr) {
			return // this replica's own address: nothing to deliver
		}
		// An answer with this replica's id from another address (a proxy)
		// is retried: the next connection may reach another replica.
		signal() // the sign-out need not wait for retries
		if attempt >= len(p.retries) {
			break
		}
		select {
		case <-p.ctx.Done():
			return
		case <-time.After(p.retries[attempt]):
		}
	}
	p.sends.WithLabelValues("failed").Inc()
	p.log.Warn("session sign-out not delivered to a peer; its next resync pulls it", "reason", reason(err))
}

// Start runs the start-up sync and then the periodic resync in the
// background until Close. self is the address the peer listener is bound
// to (skipped when a peer entry names it exactly; other local addresses on
// its port are recognised by the instance id in their first answer).
func (p *Peers) Start(self string) {
	p.mu.Lock()
	p.self[self] = true
	_, p.listenPort, _ = net.SplitHostPort(self) // "" (no port) when malformed
	p.mu.Unlock()
	p.wg.Go(func() {
		p.sync()
		t := time.NewTicker(p.resync)
		defer t.Stop()
		for {
			select {
			case <-p.ctx.Done():
				return
			case <-t.C:
				p.pullAll(p.ctx, map[string]bool{})
			}
		}
	})
}

// pullAll fetches the list of every peer not yet in answered,
// concurrently, merges it and records who answered (or turned out to be
// this replica). It reports whether the names resolved and every peer has
// answered, and how many revocations were new.
func (p *Peers) pullAll(ctx context.Context, answered map[string]bool) (complete bool, added int) {
	addrs, rerr := p.resolve(ctx)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, addr := range addrs {
		if answered[addr] {
			continue
		}
		wg.Go(func() {
			out, err := p.call(ctx, addr, http.MethodGet, nil)
			if err != nil {
				return
			}
			revs, err := decodeList(out, p.store.Max())
			if err != nil {
				return // malformed revocation list: not an answer
			}
			n := p.store.Revoke(revs...)
			mu.Lock()
			defer mu.Unlock()
			answered[addr] = true
			added += n
		})
	}
	wg.Wait()
	// Own addresses found meanwhile are no longer peers; an answer with
	// this replica's id from any other address is not an answer.
	complete = rerr == nil
	p.mu.Lock()
	for _, addr := range addrs {
		complete = complete && (answered[addr] || p.self[addr])
	}
	p.mu.Unlock()
	return complete, added
}

// sync is the start-up pull: until every resolved peer answered once, or
// SyncTimeout. Readiness waits for it.
func (p *Peers) sync() {
	defer p.ready.Store(true)
	ctx, cancel := context.WithTimeout(p.ctx, SyncTimeout)
	defer cancel()
	start := p.now()
	answered := map[string]bool{}
	total := 0
	for {
		complete, n := p.pullAll(ctx, answered)
		total += n
		if complete {
			p.log.Info("session revocations synced from peers", "peers", len(answered), "revocations", total,
				"duration_ms", p.now().Sub(start).Milliseconds())
			return
		}
		select {
		case <-ctx.Done():
			p.log.Warn("session revocations: not every peer answered at start; ready anyway",
				"peers_answered", len(answered), "revocations", total)
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}
