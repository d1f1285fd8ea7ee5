package session

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// peerServer is one replica's store and peer endpoint on 127.0.0.1.
type peerServer struct {
	store *Store
	peers *Peers
	addr  string
}

func startPeer(t *testing.T, max int, k []byte, peerAddrs func() []string) *peerServer {
	t.Helper()
	p := &peerServer{store: New(nil, time.Hour, max, k)}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p.addr = strings.TrimPrefix(srv.URL, "http://")
	var err error
	p.peers, err = NewPeers(PeerOptions{Store: p.store, Keys: [][]byte{k}, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.peers.Close)
	mux.Handle(PeerPath, p.peers)
	p.peers.addrs = peerAddrs()
	return p
}

func waitReady(t *testing.T, p *Peers) {
	t.Helper()
	deadline := time.Now().Add(SyncTimeout + 2*time.Second)
	for !p.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("not ready after SyncTimeout")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPeersShareSignOuts(t *testing.T) {
	var a, b *peerServer
	a = startPeer(t, 100, key(1), func() []string { return nil })
	b = startPeer(t, 100, key(1), func() []string { return []string{a.addr} })
	// A names itself too, as a headless Service does; it is bound to a
	// wildcard address, so only the instance id (from a local address on
	// its port) can tell.
	a.peers.addrs = []string{a.addr, b.addr}

	old, _ := a.store.Create("x", "admin")
	a.store.Delete(old.ID)
	_, aPort, _ := net.SplitHostPort(a.addr)
	a.peers.Start(net.JoinHostPort("::", aPort))
	waitReady(t, a.peers)
	a.peers.mu.Lock()
	self := a.peers.self[a.addr]
	a.peers.mu.Unlock()
	if !self {
		t.Error("A did not recognise its own address by instance id")
	}
	if got, _ := a.peers.resolve(context.Background()); !slices.Equal(got, []string{b.addr}) {
		t.Errorf("A's peers = %v, want only B", got)
	}

	b.peers.Start(b.addr)
	waitReady(t, b.peers)
	if _, ok := b.store.Get(old.ID); ok {
		t.Error("B did not pull A's sign-out at start")
	}

	live, _ := a.store.Create("y", "admin")
	start := time.Now()
	a.peers.SignOut(context.Background(), live.ID)
	if d := time.Since(start); d > SignOutWait {
		t.Errorf("SignOut took %v", d)
	}
	if _, ok := b.store.Get(live.ID); ok {
		t.Error("B accepts a session signed out on A")
	}
	if _, ok := a.store.Get(live.ID); ok {
		t.Error("A accepts a session signed out on A")
	}

	t.Run("a list beyond the bound is refused whole", func(t *testing.T) {
		c := startPeer(t, 2, key(1), func() []string { return nil })
		var revs []Revocation
		for i := 0; i < 3; i++ {
			s, _ := a.store.Create("z", "admin")
			revs = append(revs, Revocation{SID: s.SID, Expires: s.Expires})
		}
		if _, err := a.peers.call(context.Background(), c.addr, http.MethodPost, encodeList(revs)); err == nil || c.store.Len() != 0 {
			t.Errorf("3 revocations to a list of 2: %v, len %d", err, c.store.Len())
		}
	})
	t.Run("peers with other keys do not talk", func(t *testing.T) {
		d := startPeer(t, 100, key(2), func() []string { return nil })
		if _, err := a.peers.call(context.Background(), d.addr, http.MethodGet, nil); err == nil {
			t.Error("a replica with another key answered")
		} else if r := reason(err); strings.Contains(r, d.addr) || !strings.Contains(r, "403") {
			t.Errorf("reason %q (want the status, never the address)", r)
		}
	})
	t.Run("names resolve at each use", func(t *testing.T) {
		_, port, _ := strings.Cut(b.addr, ":")
		p := &Peers{addrs: []string{"localhost:" + port}, self: map[string]bool{}, resolver: a.peers.resolver}
		got, err := p.resolve(context.Background())
		if err != nil || !slices.Contains(got, b.addr) {
			t.Errorf("localhost resolved to %v, %v", got, err)
		}
	})
}
