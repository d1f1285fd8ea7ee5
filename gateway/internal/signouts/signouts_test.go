package signouts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/agentworkspace/files/gateway/internal/kube"
	"github.com/agentworkspace/files/gateway/internal/session"
)

const ns, name = "team", "agent-gateway-signouts"

var key = bytes.Repeat([]byte{7}, session.KeySize)

// replica is one gateway's store and shared list on cs.
func replica(t *testing.T, cs *fake.Clientset, max int) (*session.Store, *Shared) {
	t.Helper()
	store := session.New(nil, time.Hour, 0, key)
	s, err := New(Options{Client: kube.NewFromClientset(cs, ns), Name: name, Store: store, Max: max})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(s.Close)
	waitFor(t, "the informer to sync", s.Ready)
	return store, s
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func emptyConfigMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"}}
}

func TestSignOutReachesTheOtherReplica(t *testing.T) {
	cs := fake.NewClientset(emptyConfigMap())
	a, sa := replica(t, cs, 0)
	b, _ := replica(t, cs, 0)
	sess, _ := a.Create("alice", "admin")
	live, _ := a.Create("bob", "admin")
	if _, ok := b.Get(sess.ID); !ok {
		t.Fatal("B refuses A's live session")
	}
	if err := sa.SignOut(context.Background(), sess.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Get(sess.ID); ok {
		t.Error("A accepts the session it signed out")
	}
	waitFor(t, "B to refuse the signed-out session", func() bool { _, ok := b.Get(sess.ID); return !ok })
	if _, ok := b.Get(live.ID); !ok {
		t.Error("B refuses a live session")
	}
	// What the ConfigMap holds: the digest and the expiry, nothing else.
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := cm.Data[KeyRevoked]
	if !strings.HasPrefix(got, session.Digest(sess.SID)+" ") || strings.Count(got, "\n") != 1 {
		t.Errorf("revoked = %q, want one line of the SID's digest", got)
	}
	for _, secret := range []string{sess.SID, sess.ID, sess.CSRFToken} {
		if strings.Contains(got, secret) {
			t.Errorf("the ConfigMap shows a session secret")
		}
	}
	// A replica started later learns it from its first listing.
	c, _ := replica(t, cs, 0)
	if _, ok := c.Get(sess.ID); ok {
		t.Error("a replica started after the sign-out accepts the session")
	}
	// Signing out a session already signed out, or garbage, writes nothing.
	rv := cm.ResourceVersion
	for _, v := range []string{sess.ID, "garbage"} {
		if err := sa.SignOut(context.Background(), v); err != nil {
			t.Errorf("SignOut(%s): %v", v[:7], err)
		}
	}
	cm, _ = cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if cm.ResourceVersion != rv {
		t.Error("a sign-out of nothing live wrote the ConfigMap")
	}
}

// The Update carries the resourceVersion its Get read; a conflict is read
// again and retried, so concurrent sign-outs all land. The fake clientset
// does not check resourceVersions, so a reactor does as the API server
// does (and the API-server tier checks the real one).
func TestSignOutRetriesConflicts(t *testing.T) {
	cs := fake.NewClientset(emptyConfigMap())
	var mu sync.Mutex
	conflicts := 0
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	cs.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		cm := a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap).DeepCopy()
		cur, err := cs.Tracker().Get(gvr, ns, name)
		if err != nil {
			return true, nil, err
		}
		rv := cur.(*corev1.ConfigMap).ResourceVersion
		if cm.ResourceVersion != rv {
			conflicts++
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, name, errors.New("the object has been modified"))
		}
		n, _ := strconv.Atoi(rv)
		cm.ResourceVersion = strconv.Itoa(n + 1)
		return true, cm, cs.Tracker().Update(gvr, cm, ns)
	})
	a, sa := replica(t, cs, 0)
	sessions := make([]session.Session, 4)
	for i := range sessions {
		sessions[i], _ = a.Create("alice", "admin")
	}
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(func() {
			if err := sa.SignOut(context.Background(), s.ID); err != nil {
				t.Errorf("SignOut: %v", err)
			}
		})
	}
	wg.Wait()
	cm, _ := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	for i, s := range sessions {
		if !strings.Contains(cm.Data[KeyRevoked], session.Digest(s.SID)) {
			t.Errorf("sign-out %d lost", i)
		}
	}
	if cm.ResourceVersion != "5" {
		t.Errorf("resourceVersion %s after 4 sign-outs from 1", cm.ResourceVersion)
	}
	t.Logf("%d conflicts retried", conflicts)
}

func TestSignOutWithoutTheConfigMapFailsClearly(t *testing.T) {
	cs := fake.NewClientset()
	a, sa := replica(t, cs, 0)
	sess, _ := a.Create("alice", "admin")
	err := sa.SignOut(context.Background(), sess.ID)
	if !errors.Is(err, ErrNoConfigMap) || !strings.Contains(err.Error(), name) {
		t.Fatalf("SignOut without the ConfigMap: %v", err)
	}
	if _, ok := a.Get(sess.ID); !ok {
		t.Error("a failed sign-out ended the session here (it is recorded nowhere else)")
	}
}

// A full list drops the entries closest to expiry and raises the floor:
// every signed-out session stays refused on every replica.
func TestFullListRaisesTheFloor(t *testing.T) {
	cs := fake.NewClientset(emptyConfigMap())
	var clockMu sync.Mutex
	now := time.Now()
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	advance := func(d time.Duration) { clockMu.Lock(); now = now.Add(d); clockMu.Unlock() }
	a := session.New(clock, time.Hour, 0, key)
	sa, err := New(Options{Client: kube.NewFromClientset(cs, ns), Name: name, Store: a, Max: 3, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	sa.Start()
	defer sa.Close()
	b, _ := replica(t, cs, 3)
	var ids []string
	for i := 0; i < 5; i++ {
		s, _ := a.Create("alice", "admin")
		ids = append(ids, s.ID)
		if err := sa.SignOut(context.Background(), s.ID); err != nil {
			t.Fatal(err)
		}
		advance(2 * time.Second)
	}
	cm, _ := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if n := strings.Count(cm.Data[KeyRevoked], "\n"); n != 3 {
		t.Errorf("%d entries, want the cap of 3", n)
	}
	if cm.Data[KeyFloor] == "" {
		t.Fatal("no floor after the list overflowed")
	}
	for i, id := range ids {
		waitFor(t, "B to refuse every signed-out session", func() bool { _, ok := b.Get(id); return !ok })
		if _, ok := a.Get(id); ok {
			t.Errorf("A accepts signed-out session %d", i)
		}
	}
	// Past the session lifetime every entry and the floor are pruned.
	advance(2 * time.Hour)
	s, _ := a.Create("alice", "admin")
	if err := sa.SignOut(context.Background(), s.ID); err != nil {
		t.Fatal(err)
	}
	cm, _ = cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if n := strings.Count(cm.Data[KeyRevoked], "\n"); n != 1 || cm.Data[KeyFloor] != "" {
		t.Errorf("after a lifetime: %d entries, floor %q; want 1 and none", n, cm.Data[KeyFloor])
	}
}

func TestParseSkipsMalformedAndCapsExpiry(t *testing.T) {
	d := session.Digest("x")
	revs, floor := parse(map[string]string{
		KeyRevoked: d + " 100\nshort 100\n" + d + " notanumber\n\n" + d + "\n" + session.Digest("y") + " 200\n",
		KeyFloor:   "junk",
	}, 10)
	if len(revs) != 2 || revs[0].Expires.Unix() != 100 || !floor.IsZero() {
		t.Errorf("parse = %+v, %v", revs, floor)
	}
	now := time.Unix(1000, 0)
	out, dropped := merge(nil, session.Revocation{ID: d, Expires: time.Unix(1<<40, 0)}, now, time.Hour, 10)
	if len(out) != 1 || !out[0].Expires.Equal(now.Add(time.Hour)) || !dropped.IsZero() {
		t.Errorf("merge of a far-future expiry: %+v %v", out, dropped)
	}
}

// A replica with a shorter lifetime (a rollout that raised it) keeps the
// expiry another replica wrote: the copied cookie opens until then, so the
// sign-out must last as long.
func TestShorterLifetimeKeepsTheLongerExpiry(t *testing.T) {
	cs := fake.NewClientset(emptyConfigMap())
	long := session.New(nil, 24*time.Hour, 0, key)
	sl, err := New(Options{Client: kube.NewFromClientset(cs, ns), Name: name, Store: long})
	if err != nil {
		t.Fatal(err)
	}
	sl.Start()
	t.Cleanup(sl.Close)
	short, ss := replica(t, cs, 0) // one hour
	waitFor(t, "the long replica to sync", sl.Ready)
	sess, _ := long.Create("alice", "admin")
	alice, _ := long.RevocationOf(sess.ID)
	if err := sl.SignOut(context.Background(), sess.ID); err != nil {
		t.Fatal(err)
	}
	other, _ := short.Create("bob", "admin")
	if err := ss.SignOut(context.Background(), other.ID); err != nil {
		t.Fatal(err)
	}
	cm, _ := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	revs, _ := parse(cm.Data, MaxEntries)
	want := time.Now().Add(23 * time.Hour)
	found := false
	for _, r := range revs {
		if r.ID == alice.ID {
			found = true
			if r.Expires.Before(want) {
				t.Errorf("the short replica's write cut the 24 h sign-out to %v", time.Until(r.Expires).Round(time.Minute))
			}
		}
	}
	if !found || len(revs) != 2 {
		t.Fatalf("the ConfigMap after both sign-outs: %d entries, alice's found %v", len(revs), found)
	}
	waitFor(t, "the short replica to refuse alice's cookie", func() bool { _, ok := short.Get(sess.ID); return !ok })
	for _, r := range short.Revocations() {
		if r.ID == alice.ID && r.Expires.Before(want) {
			t.Errorf("the short replica's store cut the sign-out to %v", time.Until(r.Expires).Round(time.Minute))
		}
	}
}

// A list longer than a replica keeps loses no sign-out silently: those
// beyond the bound are covered by the floor, and the ones kept expire last.
func TestParseLongerListRaisesTheFloor(t *testing.T) {
	var b strings.Builder
	for i := range 5 {
		// Newest (latest expiry) first, as a hand edit might order them.
		fmt.Fprintf(&b, "%s %d\n", session.Digest(strconv.Itoa(i)), 1000-i*100)
	}
	revs, floor := parse(map[string]string{KeyRevoked: b.String()}, 3)
	if len(revs) != 3 || floor.Unix() != 700 {
		t.Fatalf("parse of 5 entries bounded to 3: %+v, floor %d (want the three latest, floor 700)", revs, floor.Unix())
	}
	for _, r := range revs {
		if r.Expires.Unix() < 800 {
			t.Errorf("kept an entry expiring at %d over a later one", r.Expires.Unix())
		}
	}
}
