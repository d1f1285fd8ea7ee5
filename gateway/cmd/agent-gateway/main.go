// Command agent-gateway is the Agent Workspace Files gateway: it
// authenticates admins and routes REST, WebDAV and portal traffic to each
// agent's sidecar over mutual TLS.
//
//	agent-gateway --config FILE
//	agent-gateway certs --dir DIR --agent codex-a --agent codex-b
//
// Exit status: 0 after a clean shutdown, 2 for a bad command line or
// configuration (one line per problem), 1 otherwise.
package main

import (
	"os"

	"github.com/agentworkspace/files/gateway"
)

func main() { os.Exit(gateway.Main(os.Args[1:], os.Stdout, os.Stderr)) }
