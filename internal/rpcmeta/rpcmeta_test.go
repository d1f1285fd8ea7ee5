package rpcmeta

import "testing"

// The keys are wire format between gateway and sidecar releases: they
// never change.
func TestKeys(t *testing.T) {
	for got, want := range map[string]string{RequestID: "x-request-id", Operator: "x-operator", AutoCheckpoint: "x-auto-checkpoint-id"} {
		if got != want {
			t.Errorf("key %q, want %q", got, want)
		}
	}
}
