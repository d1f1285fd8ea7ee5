// Package auth authenticates gateway requests (docs/architecture.md "Auth").
//
// Accepted credentials, in this order: an Authorization header (Bearer
// <token>, or Basic with the token as password and any username), identity
// headers from a trusted proxy (only when the TCP peer is inside the
// configured CIDRs), and the portal's session cookie. Tokens are compared as
// SHA-256 digests in constant time against every configured token.
//
// Guarantees: the operator comes only from the matched token, the trusted
// proxy's user header or the session; X-Operator and proxy identity headers
// from anyone else are removed before any handler sees the request (see
// Authenticator.Sanitize). Limits: no rate limiting of failed attempts; the
// trusted proxy is trusted completely once its peer address matches.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/agentworkspace/files/gateway/internal/config"
	"github.com/agentworkspace/files/gateway/internal/session"
)

// OperatorHeader is never trusted from clients and is always stripped.
const OperatorHeader = "X-Operator"

// Method says how a request was authenticated.
type Method string

const (
	MethodBearer  Method = "bearer"
	MethodBasic   Method = "basic"
	MethodSession Method = "session"
	MethodProxy   Method = "proxy"
	// MethodPublic is a request for a document that holds no secret and is
	// served to anyone (see PublicPaths).
	MethodPublic Method = "public"
)

// PublicPaths are served without credentials on GET and HEAD: the OpenAPI
// document (it holds no secret, and client generators such as
// `npx openapi-typescript URL` fetch it without credentials). Exact paths only.
var PublicPaths = map[string]bool{
	"/api/v1/agent-gateway/openapi.json": true,
}

// Public reports whether r asks for a public document (GET or HEAD of a
// PublicPaths entry).
func Public(r *http.Request) bool {
	// The escaped path, as the router matches it: "openapi%2Ejson" is not
	// the public document, and must not be authenticated as if it were.
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && PublicPaths[r.URL.EscapedPath()]
}

// publicIdentity passes the gateway's admin check for public documents
// only: nothing else is served under it (Authenticate returns it only when
// Public(r)), and it names no operator, so it can be neither audited nor
// sent to a sidecar as one.
var publicIdentity = Identity{Operator: "", Role: config.RoleAdmin, Method: MethodPublic}

// Identity is an authenticated caller.
type Identity struct {
	Operator string
	Role     string
	Method   Method
	// Session is set when Method is MethodSession.
	Session *session.Session
}

// Admin reports whether the identity may use the gateway.
func (i Identity) Admin() bool { return i.Role == config.RoleAdmin }

// Errors returned by Authenticate.
var (
	ErrNoCredentials  = errors.New("no credentials")
	ErrBadCredentials = errors.New("invalid credentials")
)

type ctxKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the identity in ctx.
func FromContext(ctx context.Context) (Identity, bool) {
	v, ok := ctx.Value(ctxKey{}).(Identity)
	return v, ok
}

type token struct {
	digest [32]byte
	id     Identity // operator and role
}

// Authenticator checks credentials. Safe for concurrent use.
type Authenticator struct {
	tokens   []token
	proxy    *config.TrustedProxy
	prefixes []netip.Prefix
	admins   []string // the trusted proxy's admin groups
	sessions *session.Store
}

// New builds an Authenticator from validated config.
func New(cfg config.Auth, sessions *session.Store) *Authenticator {
	a := &Authenticator{proxy: cfg.TrustedProxy, sessions: sessions}
	// auth.tokens, then the tokens of auth.tokensFile.
	for _, t := range slices.Concat(cfg.Tokens, cfg.FileTokens) {
		if b, err := hex.DecodeString(strings.ToLower(t.SHA256)); err == nil && len(b) == 32 {
			a.tokens = append(a.tokens, token{digest: [32]byte(b), id: Identity{Operator: t.Operator, Role: t.Role}})
		}
	}
	if cfg.TrustedProxy != nil {
		a.prefixes = cfg.TrustedProxy.Prefixes()
		a.admins = cfg.TrustedProxy.Admins()
	}
	return a
}

// Sessions is the session store.
func (a *Authenticator) Sessions() *session.Store { return a.sessions }

// TrustedPeer reports whether the TCP peer of r is a configured trusted proxy.
func (a *Authenticator) TrustedPeer(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	return slices.ContainsFunc(a.prefixes, func(p netip.Prefix) bool { return p.Contains(ip) })
}

// Sanitize removes headers no client may set: X-Operator always, and the
// trusted proxy's identity headers unless the peer is the trusted proxy.
// It must run before anything reads the request.
func (a *Authenticator) Sanitize(r *http.Request) {
	r.Header.Del(OperatorHeader)
	if a.proxy != nil && !a.TrustedPeer(r) {
		r.Header.Del(a.proxy.UserHeader)
		r.Header.Del(a.proxy.GroupsHeader)
	}
}

// Secure reports whether the client connection is HTTPS: TLS to us, or a
// trusted proxy saying X-Forwarded-Proto: https.
func (a *Authenticator) Secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	return a.TrustedPeer(r) && strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")
}

// configured reports whether a token with this operator and role is still
// in the configuration.
func (a *Authenticator) configured(operator, role string) bool {
	return slices.ContainsFunc(a.tokens, func(t token) bool { return t.id.Operator == operator && t.id.Role == role })
}

// Token checks a plaintext token against every configured digest in constant
// time (no early exit).
func (a *Authenticator) Token(tok string) (Identity, bool) {
	if tok == "" {
		return Identity{}, false
	}
	d := sha256.Sum256([]byte(tok))
	var id Identity
	found := false
	for _, t := range a.tokens {
		if subtle.ConstantTimeCompare(d[:], t.digest[:]) == 1 {
			id, found = t.id, true
		}
	}
	return id, found
}

// Authenticate returns the caller's identity. Call Sanitize first. A
// public document (Public) is served to anyone, whatever credentials come
// with the request.
func (a *Authenticator) Authenticate(r *http.Request) (Identity, error) {
	if Public(r) {
		return publicIdentity, nil
	}
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
		method, tok := MethodBearer, strings.TrimSpace(rest)
		switch {
		case strings.EqualFold(scheme, "Bearer"):
		case strings.EqualFold(scheme, "Basic"):
			raw, err := base64.StdEncoding.DecodeString(tok)
			_, pass, ok := strings.Cut(string(raw), ":")
			if err != nil || !ok {
				return Identity{}, ErrBadCredentials
			}
			method, tok = MethodBasic, pass
		default:
			return Identity{}, ErrBadCredentials
		}
		id, ok := a.Token(tok)
		if !ok {
			return Identity{}, ErrBadCredentials
		}
		id.Method = method
		return id, nil
	}
	if id, ok := a.fromProxy(r); ok {
		return id, nil
	}
	if c, err := r.Cookie(session.CookieName); err == nil && c.Value != "" && a.sessions != nil {
		s, ok := a.sessions.Get(c.Value)
		if !ok || !a.configured(s.Operator, s.Role) {
			// A session outlives neither its expiry nor the token it was
			// signed in with: removing or demoting an operator in
			// auth.tokens ends their sessions on every replica.
			return Identity{}, ErrBadCredentials
		}
		return Identity{Operator: s.Operator, Role: s.Role, Method: MethodSession, Session: &s}, nil
	}
	return Identity{}, ErrNoCredentials
}

// fromProxy returns the trusted proxy's identity: only from a trusted peer
// with a user header; the admin role only for a member of one of the
// configured admin groups (none configured: nobody is an admin).
func (a *Authenticator) fromProxy(r *http.Request) (Identity, bool) {
	if a.proxy == nil || !a.TrustedPeer(r) {
		return Identity{}, false
	}
	user := strings.TrimSpace(r.Header.Get(a.proxy.UserHeader))
	if user == "" {
		return Identity{}, false
	}
	role := "user"
	groups := splitGroups(r.Header.Values(a.proxy.GroupsHeader))
	if slices.ContainsFunc(a.admins, func(g string) bool { return slices.Contains(groups, g) }) {
		role = config.RoleAdmin
	}
	return Identity{Operator: user, Role: role, Method: MethodProxy}, true
}

// StripIdentity removes the trusted proxy's identity headers once the
// request is authenticated: nothing behind the auth layer (the WebDAV
// proxy to a sidecar, the REST handlers, the audit) sees them.
func (a *Authenticator) StripIdentity(r *http.Request) {
	if a.proxy != nil {
		r.Header.Del(a.proxy.UserHeader)
		r.Header.Del(a.proxy.GroupsHeader)
	}
}

// SignOutPath is the trusted proxy's sign-out path, "" without a proxy.
func (a *Authenticator) SignOutPath() string {
	if a.proxy == nil {
		return ""
	}
	return a.proxy.SignOut()
}

func splitGroups(values []string) []string {
	var out []string
	for _, v := range values {
		out = append(out, strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune(config.GroupSeparators, r) })...)
	}
	return out
}

// SafeMethod reports whether an HTTP method never changes state and so needs
// no CSRF token.
func SafeMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions, "PROPFIND":
		return true
	}
	return false
}

// CSRFHeader carries the session's CSRF token on state-changing requests.
const CSRFHeader = "X-CSRF-Token"

// CheckCSRF reports whether a request authenticated as id may proceed.
// Credentials a browser attaches by itself need protection on unsafe
// methods: a cookie session must echo its CSRF token in X-CSRF-Token, and a
// trusted-proxy identity (the proxy usually keys it on its own cookie) must
// not come from a cross-site page (Sec-Fetch-Site, else Origin vs Host).
// Bearer credentials are never sent by a browser on its own; Basic ones are
// (a browser caches them after the /dav/ challenge), so they get the same
// cross-site check as a proxy identity. Non-browser clients send neither
// Sec-Fetch-Site nor Origin and pass.
func CheckCSRF(id Identity, r *http.Request) bool {
	if SafeMethod(r.Method) {
		return true
	}
	switch id.Method {
	case MethodSession:
		return id.Session != nil && id.Session.CheckCSRF(r.Header.Get(CSRFHeader)) && sameOrigin(r)
	case MethodProxy, MethodBasic:
		return sameOrigin(r)
	}
	return true
}

// sameOrigin refuses requests a browser marks as coming from another site.
// Non-browser clients send neither header and pass.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	fh := r.Header.Get("X-Forwarded-Host")
	return fh != "" && strings.EqualFold(u.Host, strings.TrimSpace(strings.Split(fh, ",")[0]))
}
