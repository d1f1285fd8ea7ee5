package config

import (
	"regexp"
	"strings"
)

// Kubernetes is the top-level kubernetes: block: how the gateway reaches the
// Kubernetes API (agent discovery, shared sign-outs). Both keys are
// optional: an empty kubeconfig means the in-cluster configuration (the
// pod's service account), an empty namespace the pod's own namespace (read
// from the service-account files) or, with a kubeconfig, its current
// context's namespace.
type Kubernetes struct {
	Kubeconfig string `yaml:"kubeconfig"`
	Namespace  string `yaml:"namespace"`
}

// dnsLabelRe is an RFC 1123 label, the form of a namespace name.
var dnsLabelRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// validate checks the kubernetes block.
func (k Kubernetes) validate(bad func(key, format string, args ...any)) {
	if k.Kubeconfig != "" && strings.TrimSpace(k.Kubeconfig) != k.Kubeconfig {
		bad("kubernetes.kubeconfig", "%q has leading or trailing spaces", k.Kubeconfig)
	}
	if k.Namespace != "" && !dnsLabelRe.MatchString(k.Namespace) {
		bad("kubernetes.namespace", "%q is not a namespace name (lower-case letters, digits and '-', at most 63, for example agent-workspace)", k.Namespace)
	}
}
