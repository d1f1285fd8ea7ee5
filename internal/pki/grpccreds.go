package pki

import (
	"context"
	"crypto/tls"
	"errors"
	"net"

	"google.golang.org/grpc/credentials"
)

// HandshakenCredentials are gRPC server credentials for a Listener: the
// connections it hands out finished their TLS handshake already, so the
// server handshake only reports their state (peer.AuthInfo is a
// credentials.TLSInfo). A connection that is not a *tls.Conn is refused,
// so a server given a plain listener by mistake serves nobody. They have
// no client side.
func HandshakenCredentials() credentials.TransportCredentials { return handshaken{} }

type handshaken struct{}

func (handshaken) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("pki: handshaken credentials are server-side only")
}

func (handshaken) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return nil, nil, errors.New("pki: connection did not come from a pki.Listener")
	}
	return c, credentials.TLSInfo{
		State:          tc.ConnectionState(),
		CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity},
	}, nil
}

func (handshaken) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls"}
}

func (h handshaken) Clone() credentials.TransportCredentials { return h }

func (handshaken) OverrideServerName(string) error { return nil }
