//go:build tools

// Package tools pins kube-router, which the node tier's NetworkPolicy check
// (make test-k8s-netpol) runs as the policy enforcer only (no routing, no
// service proxy). deploy/scripts/k8s-tools.sh kube-router builds it.
package tools

import _ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
