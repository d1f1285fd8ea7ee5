//go:build unix && !aix

package davproxy

import "syscall"

// hasBytesWaiting reports whether an idle connection has bytes to read: a
// sidecar that sent more than its response's length. They would be taken
// for the head of the next response (http.Transport closes such a
// connection too: "unsolicited response received on idle HTTP channel").
// A connection closed by the sidecar (EOF) is not reported: the retry in
// roundTrip handles it.
func (c *rawConn) hasBytesWaiting() bool {
	sc, err := c.tc.SyscallConn()
	if err != nil {
		return true
	}
	var n int
	var buf [1]byte
	if err := sc.Read(func(fd uintptr) bool {
		n, _, _ = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // never wait for readability
	}); err != nil {
		return true
	}
	return n > 0
}
