// Command etcd is etcd's server, built from the Go module proxy for the
// Kubernetes test tiers (see deploy/scripts/k8s-tools.sh).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
