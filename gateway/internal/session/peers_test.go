package session

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
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

// An address that answered with this replica's id is its own only when it
// is an IP address on the listening port that is loopback or one of the
// host's interface addresses.
func TestNoteOwnRule(t *testing.T) {
	p, err := NewPeers(PeerOptions{Store: New(nil, time.Hour, 10, key(1)), Keys: [][]byte{key(1)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	p.listenPort = "4000"
	cases := map[string]bool{
		"127.0.0.1:4000": true, "[::1]:4000": true,
		"127.0.0.1:4001": false, "localhost:4000": false, "4000": false, "192.0.2.1:4000": false,
	}
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range ifaddrs {
		if n, ok := a.(*net.IPNet); ok {
			if n.IP.Equal(net.ParseIP("192.0.2.1")) {
				t.Skip("192.0.2.1 is a local address here")
			}
			if !n.IP.IsLoopback() && n.IP.To4() != nil {
				cases[net.JoinHostPort(n.IP.String(), "4000")] = true
				cases[net.JoinHostPort(n.IP.String(), "4001")] = false
			}
		}
	}
	for addr, want := range cases {
		p.noteOwn(addr)
		if got := p.isSelf(addr); got != want {
			t.Errorf("own(%q) = %v, want %v", addr, got, want)
		}
	}
}

// IP literals (v4, v6, v6 with a zone) are peers as they are, without a
// DNS query; names are looked up.
func TestResolveLiteralsWithoutDNS(t *testing.T) {
	var dials atomic.Int32
	r := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		dials.Add(1)
		return nil, errors.New("no DNS in this test")
	}}
	p, err := NewPeers(PeerOptions{Store: New(nil, time.Hour, 10, key(1)), Keys: [][]byte{key(1)}, Resolver: r})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	p.addrs = []string{"127.0.0.1:1", "[::1]:2", "[fe80::1%lo]:3", "[::ffff:10.0.0.1]:4"}
	got, err := p.resolve(context.Background())
	if err != nil || !slices.Equal(got, p.addrs) || dials.Load() != 0 {
		t.Errorf("resolve = %v, %v after %d DNS dials; want %v, nil, none", got, err, dials.Load(), p.addrs)
	}
	p.addrs = []string{"peers.invalid:5"}
	if got, err := p.resolve(context.Background()); err == nil || len(got) != 0 || dials.Load() == 0 {
		t.Errorf("resolve of a name = %v, %v after %d DNS dials; want an error after some", got, err, dials.Load())
	}
}
