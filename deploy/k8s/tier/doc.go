// Package tier holds the Kubernetes test tiers of issue #17, built only with
// the k8stier build tag (make test-k8s runs them):
//
//   - TestAPIServer: etcd and kube-apiserver on loopback; the dev overlay is
//     server-side applied into a namespace enforcing Pod Security
//     "restricted" with --warnings-as-errors, a second apply is a no-op, and
//     rule-breaking changes are refused.
//   - TestImages: the images of make images run under a private dockerd:
//     the sidecar read-only as UID 1000 with no capabilities and no network
//     creates a project (git init) through the gateway image.
//   - TestNode: the dev overlay on a real kubelet with containerd, kube-proxy
//     and CoreDNS, inside network, mount and PID namespaces of the test's
//     own; the PRD §15.5 steps run through the in-cluster gateway.
//
// Every tier fails (never skips) when a binary or package it needs is
// missing, bounds every wait with a timeout, and stops what it started by
// PID on exit, success or failure.
package tier
