// Command standin is the node tier's stand-in for images this machine cannot
// pull (no registry): with no arguments it is the pod sandbox ("pause"),
// which waits for SIGTERM; with -listen ADDR it stands in for the Codex
// app-server, accepting TCP connections (the pod's probes) and closing them;
// with -dial HOST:PORT it is a network probe that exits 0 when a TCP
// connection succeeds within 20 s and 1 otherwise (the NetworkPolicy check);
// with -refused HOST:PORT it is the agent calling its sidecar directly from
// inside the pod: a plain HTTP PUT (with a body and the keep header) and the
// same over TLS without a client certificate, exit 0 when neither got an
// HTTP answer (refused at the handshake), 1 when one did and 2 when
// nothing listens there; with -absent
// PATH it exits 0 when PATH does not exist in its container.
package main

import (
	"bufio"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "", "accept TCP connections on this address (app-server stand-in)")
	dial := flag.String("dial", "", "connect to this address and exit 0 on success, 1 on failure")
	refused := flag.String("refused", "", "call this sidecar address without the gateway's certificate; exit 0 when refused")
	absent := flag.String("absent", "", "exit 0 when this path does not exist")
	flag.Parse()
	if *absent != "" {
		if _, err := os.Lstat(*absent); err == nil {
			fmt.Println("standin:", *absent, "exists")
			os.Exit(1)
		}
		fmt.Println("standin:", *absent, "absent")
		return
	}
	if *refused != "" {
		os.Exit(callRefused(*refused))
	}
	if *dial != "" {
		// Retried for 20 s: a policy enforcer admits a new pod's address
		// a moment after the pod starts.
		deadline := time.Now().Add(20 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", *dial, 2*time.Second)
			if err == nil {
				c.Close()
				fmt.Println("standin: connected to", *dial)
				return
			}
			if time.Now().After(deadline) {
				fmt.Println("standin: dial", *dial+":", err)
				os.Exit(1)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	if *listen != "" {
		l, err := net.Listen("tcp", *listen)
		if err != nil {
			fmt.Fprintln(os.Stderr, "standin:", err)
			os.Exit(1)
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	<-stop
}

// put is a WebDAV PUT with a body, in keep mode, as the agent would send it.
const put = "PUT /projects/demo/planted.txt HTTP/1.1\r\nHost: sidecar\r\n" +
	"X-Workspace-Unconditional-Writes: keep\r\nX-Operator: admin\r\nContent-Length: 7\r\nConnection: close\r\n\r\nplanted"

// callRefused sends put to addr in plain text and over TLS without a
// client certificate; 0 when the port listens and no attempt got an HTTP
// answer, 1 when one did, 2 when nothing listens (no proof either way).
func callRefused(addr string) int {
	rc := 0
	for _, useTLS := range []bool{false, true} {
		answer, err := attempt(addr, useTLS)
		var dialErr *dialError
		switch {
		case errors.As(err, &dialErr):
			fmt.Printf("standin: %s: nothing listens (%v)\n", addr, err)
			return 2
		case answer != "":
			fmt.Printf("standin: %s tls=%v: answered %q\n", addr, useTLS, answer)
			rc = 1
		default:
			fmt.Printf("standin: %s tls=%v: refused (%v)\n", addr, useTLS, err)
		}
	}
	return rc
}

// attempt returns the status line the server answered, or "" and why not.
func attempt(addr string, useTLS bool) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", &dialError{err}
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var conn io.ReadWriter = c
	if useTLS {
		// The attacker does not check the server; it has no certificate.
		tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err := tc.Handshake(); err != nil {
			return "", err
		}
		conn = tc
	}
	if _, err := io.WriteString(conn, put); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if len(line) >= 5 && line[:5] == "HTTP/" {
		return line, nil
	}
	if err == nil {
		err = fmt.Errorf("not HTTP: %q", line)
	}
	return "", err
}

type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
