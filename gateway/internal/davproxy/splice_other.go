//go:build !unix || aix

package davproxy

// hasBytesWaiting cannot look at the socket without reading it here; a
// sidecar's surplus bytes then fail (or answer) the next GET on the
// connection.
func (c *rawConn) hasBytesWaiting() bool { return false }
