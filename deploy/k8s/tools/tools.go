//go:build tools

// Package tools pins the Kubernetes commands the Kubernetes test tiers run
// (deploy/k8s/README.md). deploy/scripts/k8s-tools.sh builds them from the Go
// module proxy into a cache outside the repository, keyed by this module's
// go.mod and go.sum.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
