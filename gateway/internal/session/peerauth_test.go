package session

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func signedRequest(t *testing.T, a *peerAuth, method, path string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, "http://127.0.0.1:1"+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	a.signRequest(req, randomID(idBytes), body)
	return req
}

func TestPeerAuthSignatures(t *testing.T) {
	now := time.Unix(2_000_000, 0)
	clock := func() time.Time { return now }
	mk := func(keys ...[]byte) *peerAuth {
		a, err := newPeerAuth(keys, clock)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	if _, err := newPeerAuth(nil, clock); err == nil {
		t.Error("a peer key without any session key")
	}
	body := []byte(`{"revocations":[]}`)
	for _, tc := range []struct {
		name             string
		sender, receiver [][]byte
		ok               bool
	}{
		{"same key", [][]byte{key(1)}, [][]byte{key(1)}, true},
		{"another key", [][]byte{key(2)}, [][]byte{key(1)}, false},
		{"sender rotated first (new key first, old second)", [][]byte{key(2), key(1)}, [][]byte{key(1)}, true},
		{"receiver rotated first", [][]byte{key(1)}, [][]byte{key(2), key(1)}, true},
		{"old key dropped on the receiver", [][]byte{key(1)}, [][]byte{key(2)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := mk(tc.receiver...).verifyRequest(signedRequest(t, mk(tc.sender...), "POST", PeerPath, body))
			if (err == nil) != tc.ok {
				t.Errorf("verify = %v, want ok=%v", err, tc.ok)
			}
		})
	}
	t.Run("the peer key is not the session key", func(t *testing.T) {
		a := mk(key(1))
		if bytes.Equal(a.keys[0], key(1)) || len(a.keys[0]) != 32 {
			t.Error("the HMAC key must be derived (HKDF with a purpose label), not the sealing key")
		}
	})

	a := mk(key(1))
	tamper := []struct {
		name string
		edit func(*http.Request)
		want error
	}{
		{"untouched", func(*http.Request) {}, nil},
		{"other body digest", func(r *http.Request) { r.Header.Set(headerBody, bodyDigest([]byte(`{"revocations":[{"sid":"x"}]}`))) }, errBadSignature},
		{"other method", func(r *http.Request) { r.Method = "GET" }, errBadSignature},
		{"other path", func(r *http.Request) { r.URL.Path = "/metrics" }, errBadSignature},
		{"other instance", func(r *http.Request) { r.Header.Set(headerInstance, randomID(idBytes)) }, errBadSignature},
		{"other timestamp", func(r *http.Request) { r.Header.Set(headerTimestamp, "2000001") }, errBadSignature},
		{"no signature", func(r *http.Request) { r.Header.Del(headerSignature) }, errNoSignature},
		{"no nonce", func(r *http.Request) { r.Header.Del(headerNonce) }, errNoSignature},
		{"no body digest", func(r *http.Request) { r.Header.Del(headerBody) }, errNoSignature},
		{"long nonce", func(r *http.Request) { r.Header.Set(headerNonce, strings.Repeat("A", 1<<16)) }, errBadHeader},
		{"short instance", func(r *http.Request) { r.Header.Set(headerInstance, "me") }, errBadHeader},
		{"nonce not base64url", func(r *http.Request) { r.Header.Set(headerNonce, strings.Repeat("+", 22)) }, errBadHeader},
		{"digest in capitals", func(r *http.Request) { r.Header.Set(headerBody, strings.ToUpper(r.Header.Get(headerBody))) }, errBadHeader},
		{"too many signatures", func(r *http.Request) {
			r.Header.Set(headerSignature, strings.Repeat("AAAA,", maxSignatures)+r.Header.Get(headerSignature))
		}, errBadSignature},
	}
	for _, tc := range tamper {
		t.Run(tc.name, func(t *testing.T) {
			req := signedRequest(t, a, "POST", PeerPath, body)
			tc.edit(req)
			if err := a.verifyRequest(req); !errors.Is(err, tc.want) {
				t.Errorf("verify = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestPeerAuthWindowAndReplay(t *testing.T) {
	now := time.Unix(2_000_000, 0)
	clock := func() time.Time { return now }
	a, _ := newPeerAuth([][]byte{key(1)}, clock)
	at := func(d time.Duration) *http.Request {
		saved := now
		now = now.Add(d)
		defer func() { now = saved }()
		return signedRequest(t, a, "GET", PeerPath, nil)
	}
	for _, tc := range []struct {
		skew time.Duration
		want error
	}{
		{0, nil},
		{-PeerWindow, nil},
		{PeerWindow, nil},
		{-PeerWindow - time.Second, errStale},
		{PeerWindow + time.Second, errStale},
	} {
		if err := a.verifyRequest(at(tc.skew)); !errors.Is(err, tc.want) {
			t.Errorf("sent %v from now: %v, want %v", tc.skew, err, tc.want)
		}
	}

	req := signedRequest(t, a, "GET", PeerPath, nil)
	if err := a.verifyRequest(req); err != nil {
		t.Fatal(err)
	}
	if err := a.verifyRequest(req); !errors.Is(err, errReplayed) {
		t.Errorf("replay within the window: %v", err)
	}
	now = now.Add(PeerWindow + time.Second)
	if err := a.verifyRequest(req); !errors.Is(err, errStale) {
		t.Errorf("replay after the window: %v", err)
	}

	t.Run("a full replay cache refuses, then recovers", func(t *testing.T) {
		a, _ := newPeerAuth([][]byte{key(1)}, clock)
		for i := 0; i < maxNonces; i++ {
			a.nonces[randomID(idBytes)] = now.Add(2 * PeerWindow)
		}
		if err := a.verifyRequest(signedRequest(t, a, "GET", PeerPath, nil)); !errors.Is(err, errNonceFull) {
			t.Errorf("full cache: %v", err)
		}
		now = now.Add(2*PeerWindow + time.Second)
		if err := a.verifyRequest(signedRequest(t, a, "GET", PeerPath, nil)); err != nil {
			t.Errorf("after the entries aged out: %v", err)
		}
		if len(a.nonces) != 1 {
			t.Errorf("nonces = %d, want the aged-out ones dropped", len(a.nonces))
		}
	})
}

func TestPeerAuthResponses(t *testing.T) {
	a, _ := newPeerAuth([][]byte{key(1)}, nil)
	other, _ := newPeerAuth([][]byte{key(2)}, time.Now)
	a.now = time.Now
	body := []byte(`{"revocations":[]}`)
	resp := func(signer *peerAuth, nonce string, status int) *http.Response {
		r := &http.Response{StatusCode: status, Header: http.Header{}}
		signer.signResponse(r.Header, nonce, status, "responder", body)
		return r
	}
	if err := a.verifyResponse(resp(a, "n", 200), "n", body); err != nil {
		t.Errorf("good response: %v", err)
	}
	for name, r := range map[string]*http.Response{
		"another request's nonce": resp(a, "m", 200),
		"another key":             resp(other, "n", 200),
	} {
		if err := a.verifyResponse(r, "n", body); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	r := resp(a, "n", 200)
	r.StatusCode = 403
	if err := a.verifyResponse(r, "n", body); err == nil {
		t.Error("status changed: accepted")
	}
	if err := a.verifyResponse(resp(a, "n", 200), "n", []byte("{}")); err == nil {
		t.Error("body changed: accepted")
	}
}
