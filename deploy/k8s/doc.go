// Package k8s holds the Kustomize manifests (base/, overlays/dev/) and a test
// that renders the dev overlay, decodes every object strictly into its typed
// Kubernetes API struct and checks the deployment rules of PRD §13, §15.4.
// It is its own Go module so the Kubernetes API types stay out of the
// product's dependency graph.
package k8s
