// Command agent-sidecar serves one agent's volumes over gRPC and WebDAV.
//
//	agent-sidecar --config /etc/agent-sidecar/config.yaml
//
// Exit status: 0 after a clean shutdown (SIGINT/SIGTERM), 2 for a bad
// command line or configuration (one line per problem), 1 otherwise.
package main

import (
	"os"

	"github.com/agentworkspace/files/sidecar"
)

func main() { os.Exit(sidecar.Main(os.Args[1:], os.Stderr)) }
