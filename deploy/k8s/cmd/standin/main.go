// Command standin is the node tier's stand-in for images this machine cannot
// pull (no registry): with no arguments it is the pod sandbox ("pause"),
// which waits for SIGTERM; with -listen ADDR it stands in for the Codex
// app-server, accepting TCP connections (the pod's probes) and closing them.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	listen := flag.String("listen", "", "accept TCP connections on this address (app-server stand-in)")
	flag.Parse()
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
