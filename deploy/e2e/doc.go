// Package e2e holds the end-to-end acceptance test of PRD §15.5: real
// agent-sidecar and agent-gateway binaries on loopback, driven only through
// the public REST API and the WebDAV view, exactly as an admin would.
package e2e
