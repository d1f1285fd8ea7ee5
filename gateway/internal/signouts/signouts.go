// Package signouts shares the gateway replicas' sign-outs through the
// Kubernetes API: one ConfigMap (auth.session.signOutConfigMap) holds the
// revoked sessions, every replica watches it with a client-go informer and
// feeds what it sees into its session.Store, and a sign-out writes it with
// Get and Update under the resourceVersion it read (optimistic
// concurrency: a conflicting write is read again and retried, so
// concurrent sign-outs on several replicas all land).
//
// The ConfigMap's data (the only format; anything else in it is ignored):
//
//	revoked: "<digest> <expiry unix seconds>\n..."   # one line a sign-out
//	floor:   "<unix seconds>"                        # optional
//
// A digest is session.Digest of the session id (SHA-256, base64url): the
// ConfigMap holds no cookie and no session id, and an entry opens nothing.
// Every write drops the entries that expired, cuts expiries to the session
// lifetime from now and keeps at most MaxEntries (about 550 KB, well below
// a ConfigMap's 1 MiB; all in one key, so the object's managedFields stay
// one field). When a sign-out would make more, the entries closest to
// expiry are dropped and floor is raised to the latest expiry dropped:
// every session expiring at or before it is refused on every replica (the
// oldest sessions are signed out with them; fail closed, never reopened).
//
// Guarantees: a sign-out answers only once the Update was accepted by the
// API server, so it is on record for every replica, present and future;
// each replica refuses the session as soon as its informer delivers the
// change (normally well under a second), and the replica that signed out
// refuses it at once. A replica is ready (/readyz) only once its informer
// has listed the ConfigMap, so a restarted replica never serves without
// the list. Limits: while a replica's watch is broken (the API server
// unreachable) it keeps what it had and learns new sign-outs only when the
// informer lists again; a sign-out while the API server is unreachable
// fails clearly (the session stays live everywhere, nothing is lost, the
// user may try again). The gateway never creates the ConfigMap (its Role
// has no create): the deployment does.
package signouts

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/agentworkspace/files/gateway/internal/kube"
	"github.com/agentworkspace/files/gateway/internal/session"
)

// Data keys of the ConfigMap.
const (
	KeyRevoked = "revoked"
	KeyFloor   = "floor"
)

// MaxEntries bounds the shared list: a line is at most 43 + 1 + 20 + 1
// bytes, so the ConfigMap's data stays below 650 KB of its 1 MiB.
const MaxEntries = session.DefaultMaxSessions

// SignOutTimeout bounds one sign-out's reads and writes, retries included.
const SignOutTimeout = 5 * time.Second

// conflictBackoff retries a write that lost a resourceVersion race: 8
// attempts over about 2.5 s, jittered so racing replicas drift apart.
var conflictBackoff = wait.Backoff{Steps: 8, Duration: 10 * time.Millisecond, Factor: 2, Jitter: 0.5}

// ErrNoConfigMap: the ConfigMap does not exist (the deployment creates it).
var ErrNoConfigMap = errors.New("the sign-out ConfigMap does not exist")

// Options configure Shared.
type Options struct {
	Client *kube.Client
	// Name is auth.session.signOutConfigMap, in Client.Namespace.
	Name  string
	Store *session.Store
	// Max bounds the list; 0 uses MaxEntries.
	Max    int
	Logger hclog.Logger
	// Registerer receives the metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Now is the clock; nil uses time.Now.
	Now func() time.Time
}

// Shared is the sign-out list every replica shares (see the package doc).
type Shared struct {
	client *kube.Client
	name   string
	store  *session.Store
	max    int
	log    hclog.Logger
	now    func() time.Time

	informer cache.SharedIndexInformer
	handler  cache.ResourceEventHandlerRegistration
	stop     chan struct{}
	done     chan struct{} // closed when the informer's Run has returned
	started  atomic.Bool
	synced   atomic.Bool

	signOuts  *prometheus.CounterVec
	conflicts prometheus.Counter
}

// New returns the shared list; Start begins watching.
func New(o Options) (*Shared, error) {
	if o.Client == nil || o.Store == nil || o.Name == "" {
		return nil, errors.New("signouts: a client, a store and a ConfigMap name are needed")
	}
	s := &Shared{
		client: o.Client, name: o.Name, store: o.Store, max: cmp.Or(max(o.Max, 0), MaxEntries),
		log: cmp.Or(o.Logger, hclog.NewNullLogger()), now: o.Now, stop: make(chan struct{}), done: make(chan struct{}),
		signOuts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agent_gateway_session_signouts_total", Help: "Sign-outs written to the shared ConfigMap, by result (ok, failed).",
		}, []string{"result"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agent_gateway_session_signout_conflicts_total", Help: "Sign-out writes that lost a resourceVersion race and were read and tried again.",
		}),
	}
	if o.Registerer != nil {
		held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "agent_gateway_session_revocations", Help: "Signed-out sessions remembered until they would have expired.",
		}, func() float64 { return float64(o.Store.Len()) })
		for _, c := range []prometheus.Collector{s.signOuts, s.conflicts, held} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, err
			}
		}
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.informer = s.newInformer()
	return s, nil
}

// newInformer watches the one ConfigMap by name (a field selector, which a
// Role with resourceNames allows for list and watch).
func (s *Shared) newInformer() cache.SharedIndexInformer {
	f := informers.NewSharedInformerFactoryWithOptions(s.client.Clientset, 0,
		informers.WithNamespace(s.client.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.name).String()
		}))
	inf := f.Core().V1().ConfigMaps().Informer()
	// The handler's own HasSynced, not the informer's: the cache can be
	// filled before the handler has merged what it holds (client-go says
	// so), and Ready must mean the sign-outs are in the store.
	s.handler, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.observe,
		UpdateFunc: func(_, obj any) { s.observe(obj) },
		DeleteFunc: func(any) {
			s.log.Warn("the sign-out ConfigMap was deleted: sign-outs fail until it is created again; those known stay refused here", "configmap", s.name)
		},
	})
	return inf
}

// observe merges a ConfigMap the informer delivered into the store.
func (s *Shared) observe(obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || cm.Name != s.name {
		return
	}
	revs, floor := parse(cm.Data, s.max)
	if n := s.store.Revoke(revs...); n > 0 {
		s.log.Debug("sign-outs from the shared list", "added", n)
	}
	if !floor.IsZero() {
		s.store.RaiseFloor(floor)
	}
}

// Start runs the informer until Close; Ready reports once it has listed.
func (s *Shared) Start() {
	s.started.Store(true)
	go func() {
		defer close(s.done)
		s.informer.Run(s.stop)
	}()
	go func() {
		if cache.WaitForCacheSync(s.stop, s.informer.HasSynced, s.handler.HasSynced) {
			s.synced.Store(true)
			s.log.Info("sign-out list synced from the Kubernetes API", "configmap", s.name, "revocations", s.store.Len())
		}
	}()
}

// Ready reports whether the informer has listed the ConfigMap once.
func (s *Shared) Ready() bool { return s.synced.Load() }

// Close stops the informer and waits for it: no sign-out is merged after.
func (s *Shared) Close() {
	close(s.stop)
	if s.started.Load() {
		<-s.done
	}
}

// SignOut records the sign-out of the session sealed in a cookie value in
// the ConfigMap and then in this replica's store. A value that opens no
// live session changes nothing (nil). An error means nothing was recorded
// anywhere: the session is still live, and the caller says so.
func (s *Shared) SignOut(ctx context.Context, value string) error {
	rev, ok := s.store.RevocationOf(value)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), SignOutTimeout)
	defer cancel()
	attempt := 0
	err := retry.RetryOnConflict(conflictBackoff, func() error {
		if attempt++; attempt > 1 {
			s.conflicts.Inc()
		}
		return s.write(ctx, rev)
	})
	if err != nil {
		s.signOuts.WithLabelValues("failed").Inc()
		return err
	}
	s.signOuts.WithLabelValues("ok").Inc()
	s.store.Revoke(rev)
	return nil
}

// write is one Get and Update: the Update carries the resourceVersion the
// Get returned, so it fails with a conflict if anyone wrote in between.
func (s *Shared) write(ctx context.Context, rev session.Revocation) error {
	cms := s.client.Clientset.CoreV1().ConfigMaps(s.client.Namespace)
	cm, err := cms.Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%w (%s in namespace %s; the deployment creates it)", ErrNoConfigMap, s.name, s.client.Namespace)
	}
	if err != nil {
		return err
	}
	revs, floor := parse(cm.Data, s.max)
	revs, dropped := merge(revs, rev, s.now(), s.store.RevocationBound(), s.max)
	if dropped.After(floor) {
		floor = dropped
		s.log.Warn("the shared sign-out list is full: sessions expiring before the floor are refused on every replica",
			"max", s.max, "floor", floor.UTC().Format(time.RFC3339))
	}
	if !floor.IsZero() && !floor.After(s.now()) {
		floor = time.Time{} // every session it refused has expired
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[KeyRevoked] = encode(revs)
	if floor.IsZero() {
		delete(cm.Data, KeyFloor)
	} else {
		cm.Data[KeyFloor] = strconv.FormatInt(floor.Unix(), 10)
	}
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: kube.UserAgent})
	return err
}

// merge adds rev to revs, drops expired entries, cuts expiries to bound
// (the store's RevocationBound, never this replica's lifetime alone: others
// may run a longer one) from now and bounds the list to n; it returns the list and the latest
// expiry it dropped to stay within n (zero: none).
func merge(revs []session.Revocation, rev session.Revocation, now time.Time, bound time.Duration, n int) ([]session.Revocation, time.Time) {
	latest := now.Add(bound)
	byID := make(map[string]time.Time, len(revs)+1)
	for _, r := range append(revs, rev) {
		if !now.Before(r.Expires) {
			continue
		}
		if r.Expires.After(latest) {
			r.Expires = latest
		}
		if old, ok := byID[r.ID]; !ok || r.Expires.After(old) {
			byID[r.ID] = r.Expires
		}
	}
	out := make([]session.Revocation, 0, len(byID))
	for id, exp := range byID {
		out = append(out, session.Revocation{ID: id, Expires: exp})
	}
	return session.Bound(out, n)
}

// parse reads the ConfigMap's data: every line (the object is at most
// 1 MiB), then the n entries expiring last, the floor raised to the latest
// expiry of those beyond n (fail closed: a list longer than this replica
// keeps, after a manual edit or from a version with a larger bound, loses
// no sign-out silently); malformed lines are skipped (the store also
// checks each digest).
func parse(data map[string]string, n int) ([]session.Revocation, time.Time) {
	var revs []session.Revocation
	for line := range strings.Lines(data[KeyRevoked]) {
		id, exp, ok := strings.Cut(strings.TrimSpace(line), " ")
		sec, err := strconv.ParseInt(exp, 10, 64)
		if !ok || err != nil || len(id) != 43 {
			continue
		}
		revs = append(revs, session.Revocation{ID: id, Expires: time.Unix(sec, 0)})
	}
	var floor time.Time
	if sec, err := strconv.ParseInt(strings.TrimSpace(data[KeyFloor]), 10, 64); err == nil && sec > 0 {
		floor = time.Unix(sec, 0)
	}
	revs, dropped := session.Bound(revs, n)
	if dropped.After(floor) {
		floor = dropped
	}
	return revs, floor
}

// encode writes the entries one a line, as parse reads them.
func encode(revs []session.Revocation) string {
	var b strings.Builder
	b.Grow(len(revs) * 56)
	for _, r := range revs {
		b.WriteString(r.ID)
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(r.Expires.Unix(), 10))
		b.WriteByte('\n')
	}
	return b.String()
}
