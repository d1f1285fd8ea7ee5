package gatewaytest

import (
	"syscall"
	"time"
)

// Kill sends SIGKILL (a crash: nothing drained) and waits for the exit.
func (g *Gateway) Kill() {
	p := g.run.Current()
	if p == nil {
		return
	}
	p.Signal(syscall.SIGKILL)
	p.Wait(15 * time.Second)
}
