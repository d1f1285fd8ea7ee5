package session

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Headers of the peer protocol. Every request carries all five (the body's
// digest in a header, so the signature is checked before any of the body
// is read); every response carries the instance and a signature bound to
// the request's nonce.
const (
	headerInstance  = "X-Session-Peer-Instance"
	headerTimestamp = "X-Session-Peer-Timestamp"
	headerNonce     = "X-Session-Peer-Nonce"
	headerBody      = "X-Session-Peer-Body-SHA256"
	headerSignature = "X-Session-Peer-Signature"
)

// idBytes is the size of a nonce or instance id: 16 random bytes,
// base64url without padding (22 characters). Anything else is refused
// before any work.
const idBytes = 16

// PeerWindow is how far a peer request's timestamp may be from this
// replica's clock; a nonce is remembered for twice as long, so a request is
// accepted at most once.
const PeerWindow = 30 * time.Second

// peerKeyInfo is the HKDF purpose label: the peer key is never a session
// sealing key, and a signature made for anything else does not verify.
const peerKeyInfo = "agent-gateway session peers v1"

// maxSignatures bounds the signatures a request may present (one per key
// of the sender; a few during a rotation).
const maxSignatures = 8

// maxNonces bounds the replay cache. Only requests with a valid signature
// reach it, so only a key holder can fill it; when full, requests are
// refused until entries age out (fail closed).
const maxNonces = 10000

// errPeerAuth is the reason a peer request or response was refused; the
// reason is a fixed phrase, safe for logs and metric labels.
type errPeerAuth string

func (e errPeerAuth) Error() string { return string(e) }

const (
	errNoSignature  errPeerAuth = "missing signature"
	errBadSignature errPeerAuth = "bad signature"
	errStale        errPeerAuth = "timestamp outside the window"
	errReplayed     errPeerAuth = "replayed nonce"
	errNonceFull    errPeerAuth = "replay cache full"
	errBadHeader    errPeerAuth = "malformed peer header"
)

// peerAuth signs and verifies peer requests and responses with HMAC-SHA256
// under keys derived by HKDF from the session keys: it signs with every
// key and accepts a signature under any, so replicas keep talking while a
// rolling update rotates the first key.
type peerAuth struct {
	keys [][]byte
	now  func() time.Time

	mu     sync.Mutex
	nonces map[string]time.Time // nonce -> when it may be forgotten
}

func newPeerAuth(sessionKeys [][]byte, now func() time.Time) (*peerAuth, error) {
	a := &peerAuth{now: now, nonces: map[string]time.Time{}}
	for _, k := range sessionKeys {
		d, err := hkdf.Key(sha256.New, k, nil, peerKeyInfo, 32)
		if err != nil {
			return nil, err
		}
		a.keys = append(a.keys, d)
	}
	if len(a.keys) == 0 {
		return nil, errors.New("session peers need at least one session key")
	}
	return a, nil
}

func bodyDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

func requestMessage(method, path, ts, nonce, instance, digest string) string {
	return strings.Join([]string{"request", method, path, ts, nonce, instance, digest}, "\n")
}

// validDigest reports whether s is a hex SHA-256 as bodyDigest writes it.
func validDigest(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

func responseMessage(nonce string, status int, instance string, body []byte) string {
	return strings.Join([]string{"response", nonce, strconv.Itoa(status), instance, bodyDigest(body)}, "\n")
}

// sign returns one signature per key, comma-separated.
func (a *peerAuth) sign(msg string) string {
	sigs := make([]string, len(a.keys))
	for i, k := range a.keys {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(msg))
		sigs[i] = base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	return strings.Join(sigs, ",")
}

// verify reports whether any presented signature is msg's under any key.
func (a *peerAuth) verify(msg, presented string) error {
	if presented == "" {
		return errNoSignature
	}
	sigs := strings.SplitN(presented, ",", maxSignatures+1)
	if len(sigs) > maxSignatures {
		return errBadSignature
	}
	ok := false
	for _, k := range a.keys {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(msg))
		want := m.Sum(nil)
		for _, s := range sigs {
			got, err := base64.RawURLEncoding.DecodeString(s)
			if err == nil && hmac.Equal(got, want) {
				ok = true
			}
		}
	}
	if !ok {
		return errBadSignature
	}
	return nil
}

// signRequest sets the peer headers on req for body and returns the nonce
// the response must be bound to.
func (a *peerAuth) signRequest(req *http.Request, instance string, body []byte) string {
	ts := strconv.FormatInt(a.now().Unix(), 10)
	nonce := randomID(idBytes)
	req.Header.Set(headerInstance, instance)
	req.Header.Set(headerTimestamp, ts)
	req.Header.Set(headerNonce, nonce)
	digest := bodyDigest(body)
	req.Header.Set(headerBody, digest)
	req.Header.Set(headerSignature, a.sign(requestMessage(req.Method, req.URL.Path, ts, nonce, instance, digest)))
	return nonce
}

// verifyRequest checks a received request's headers only: their shape,
// the signature (over the body digest the request announces, which the
// caller compares with the body once read), the timestamp against the
// window and the nonce against the replay cache (in that order: an
// unsigned request never touches the cache, and no body is read before).
func (a *peerAuth) verifyRequest(r *http.Request) error {
	h := r.Header
	ts, nonce, instance, digest := h.Get(headerTimestamp), h.Get(headerNonce), h.Get(headerInstance), h.Get(headerBody)
	if h.Get(headerSignature) == "" || ts == "" || nonce == "" || instance == "" || digest == "" {
		return errNoSignature
	}
	if !validID(nonce, idBytes) || !validID(instance, idBytes) || !validDigest(digest) || len(ts) > 20 {
		return errBadHeader
	}
	if err := a.verify(requestMessage(r.Method, r.URL.Path, ts, nonce, instance, digest), h.Get(headerSignature)); err != nil {
		return err
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	now := a.now()
	if d := now.Sub(time.Unix(sec, 0)); err != nil || d > PeerWindow || d < -PeerWindow {
		return errStale
	}
	return a.remember(nonce, now)
}

// remember records a nonce; one seen before within the window is refused.
func (a *peerAuth) remember(nonce string, now time.Time) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if until, seen := a.nonces[nonce]; seen && now.Before(until) {
		return errReplayed
	}
	if len(a.nonces) >= maxNonces {
		dropExpired(a.nonces, now)
		if len(a.nonces) >= maxNonces {
			return errNonceFull
		}
	}
	// A timestamp may be PeerWindow in the future and is accepted until
	// PeerWindow after that: remember the nonce for the whole span.
	a.nonces[nonce] = now.Add(2 * PeerWindow)
	return nil
}

// signResponse sets the response headers for body, bound to the request's
// nonce and the status.
func (a *peerAuth) signResponse(h http.Header, nonce string, status int, instance string, body []byte) {
	h.Set(headerInstance, instance)
	h.Set(headerSignature, a.sign(responseMessage(nonce, status, instance, body)))
}

// verifyResponse checks a response to the request that carried nonce.
func (a *peerAuth) verifyResponse(resp *http.Response, nonce string, body []byte) error {
	return a.verify(responseMessage(nonce, resp.StatusCode, resp.Header.Get(headerInstance), body), resp.Header.Get(headerSignature))
}
