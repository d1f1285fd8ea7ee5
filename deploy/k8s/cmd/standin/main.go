// Command standin is the node tier's stand-in for images this machine cannot
// pull (no registry): with no arguments it is the pod sandbox ("pause"),
// which waits for SIGTERM; with -listen ADDR it stands in for the Codex
// app-server, accepting TCP connections (the pod's probes) and closing them;
// with -dial HOST:PORT it is a network probe that exits 0 when a TCP
// connection succeeds within 20 s and 1 otherwise (the NetworkPolicy check).
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "", "accept TCP connections on this address (app-server stand-in)")
	dial := flag.String("dial", "", "connect to this address and exit 0 on success, 1 on failure")
	flag.Parse()
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
