//go:build tools

// Package tools pins oauth2-proxy, the authenticating proxy the dev overlay
// runs in front of the portal (docs/sso.md) and the SSO tests run against
// mockoidc. deploy/scripts/k8s-tools.sh oauth2-proxy builds it.
package tools

import _ "github.com/oauth2-proxy/oauth2-proxy/v7"
