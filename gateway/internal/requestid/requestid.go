// Package requestid carries the request ID of one gateway request: accepted
// from X-Request-ID when it is sane, generated otherwise, sent to sidecars as
// gRPC metadata rpcmeta.RequestID and returned on every response.
package requestid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// Header is the HTTP header carrying the request ID both ways.
const Header = "X-Request-ID"

// MaxLen bounds an accepted client-supplied ID.
const MaxLen = 128

type ctxKey struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// From returns the request ID in ctx, or "".
func From(ctx context.Context) string {
	v, _ := ctx.Value(ctxKey{}).(string)
	return v
}

// Sanitize returns the client-supplied ID when it is 1..MaxLen printable
// ASCII characters without spaces, else "".
func Sanitize(s string) string {
	// A non-ASCII or invalid byte decodes to a rune >= 0x80.
	if s == "" || len(s) > MaxLen || strings.ContainsFunc(s, func(r rune) bool { return r <= 0x20 || r >= 0x7f }) {
		return ""
	}
	return s
}

// New generates a random ID (32 hex characters).
func New() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
