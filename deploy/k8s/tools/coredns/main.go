// Command coredns is CoreDNS with only the plugins the node tier's cluster
// DNS uses (bind, cache, errors, health, kubernetes, log, ready), built
// from the Go module proxy (see deploy/scripts/k8s-tools.sh).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// dnsserver is imported for its server type's registration.
var _ = dnsserver.Directives

func main() { coremain.Run() }
