package discovery

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/gateway/internal/auth"
	"github.com/agentworkspace/files/gateway/internal/config"
	"github.com/agentworkspace/files/gateway/internal/kube"
	"github.com/agentworkspace/files/gateway/internal/mgmt"
	"github.com/agentworkspace/files/internal/pki"
)

const ns = "agents"

func ptr[T any](v T) *T { return &v }

// slice is an EndpointSlice of agent id's sidecar Service with one
// endpoint per address (ready as given) and the grpc and webdav ports.
func slice(name, namespace string, labels map[string]string, ready bool, addrs ...string) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr("grpc"), Port: ptr(int32(9091)), Protocol: ptr[corev1.Protocol]("TCP")},
			{Name: ptr("webdav"), Port: ptr(int32(9092)), Protocol: ptr[corev1.Protocol]("TCP")},
		},
	}
	for _, a := range addrs {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(ready)}})
	}
	return es
}

func agentLabel(id string) map[string]string {
	return map[string]string{config.DefaultDiscoveryLabelKey: id}
}

// registry is a real mgmt.Service with a static agent "static-a" and the
// gateway's real client certificate.
func registry(t *testing.T) *mgmt.Service {
	t.Helper()
	dir := t.TempDir()
	if _, err := pki.Ensure(dir, []string{"static-a"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	src, err := pki.NewSource(pki.GatewayFiles(dir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := mgmt.New(config.AgentRuntime{
		Agents: map[string]config.Agent{"static-a": {Provider: "codex_app_server", Sidecar: &config.Sidecar{Endpoint: "127.0.0.1:1", DavEndpoint: "https://127.0.0.1:2"}}},
	}, mgmt.Deps{TLS: src})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	return svc
}

// listed is ListAgents' whole answer as id → state (one large page).
func listed(t *testing.T, svc *mgmt.Service) map[string]workspacev1.AgentState {
	t.Helper()
	ctx := auth.WithIdentity(context.Background(), auth.Identity{Operator: "t", Role: config.RoleAdmin})
	r, err := svc.ListAgents(ctx, &workspacev1.ListAgentsRequest{PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]workspacev1.AgentState{}
	for _, a := range r.GetAgents() {
		out[a.GetAgentId()] = a.GetState()
	}
	return out
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDiscoveryFollowsSlices(t *testing.T) {
	cs := fake.NewClientset()
	svc := registry(t)
	d, err := Start(context.Background(), Options{Client: kube.NewFromClientset(cs, ns), Sink: svc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	eventually(t, "first list", d.HasSynced)
	es := cs.DiscoveryV1().EndpointSlices(ns)
	ctx := context.Background()

	if _, err := es.Create(ctx, slice("b-1", ns, agentLabel("agent-b"), false, "10.1.0.2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "agent-b listed unreachable", func() bool { return listed(t, svc)["agent-b"] == workspacev1.AgentState_AGENT_STATE_UNREACHABLE })
	if u, ok := svc.DavEndpoint("agent-b"); !ok || u != nil {
		t.Fatalf("an unready agent has a WebDAV endpoint: %v %v", u, ok)
	}

	ready := slice("b-1", ns, agentLabel("agent-b"), true, "10.1.0.2")
	if _, err := es.Update(ctx, ready, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "agent-b ready", func() bool { return listed(t, svc)["agent-b"] == workspacev1.AgentState_AGENT_STATE_READY })
	if u, _ := svc.DavEndpoint("agent-b"); u == nil || u.String() != "https://10.1.0.2:9092" {
		t.Fatalf("agent-b's WebDAV endpoint: %v", u)
	}

	// Never routed to: no agent label, another namespace, not ready.
	for _, o := range []*discoveryv1.EndpointSlice{
		slice("x-1", ns, map[string]string{"app": "agent-x"}, true, "10.1.0.3"),
		slice("y-1", "elsewhere", agentLabel("agent-y"), true, "10.1.0.4"),
		slice("z-1", ns, agentLabel("agent-z"), false, "10.1.0.5"),
	} {
		if _, err := cs.DiscoveryV1().EndpointSlices(o.Namespace).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "agent-z listed", func() bool { _, ok := listed(t, svc)["agent-z"]; return ok })
	got := listed(t, svc)
	if _, ok := got["agent-x"]; ok {
		t.Error("a slice without the label was discovered")
	}
	if _, ok := got["agent-y"]; ok {
		t.Error("a slice of another namespace was discovered")
	}
	if got["agent-z"] != workspacev1.AgentState_AGENT_STATE_UNREACHABLE {
		t.Errorf("agent-z (not ready) is %v", got["agent-z"])
	}
	if u, _ := svc.DavEndpoint("agent-z"); u != nil {
		t.Errorf("agent-z (not ready) is routed to %v", u)
	}

	if err := es.Delete(ctx, "b-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "agent-b gone", func() bool { _, ok := listed(t, svc)["agent-b"]; return !ok })
	if svc.Known("agent-b") {
		t.Error("a removed agent is still known")
	}
}

// A discovered agent with a static agent's id does not replace it; the
// static one keeps its endpoint.
func TestStaticWinsOnAClash(t *testing.T) {
	cs := fake.NewClientset(slice("s-1", ns, agentLabel("static-a"), true, "10.9.9.9"))
	svc := registry(t)
	d, err := Start(context.Background(), Options{Client: kube.NewFromClientset(cs, ns), Sink: svc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	eventually(t, "first list", d.HasSynced)
	if u, _ := svc.DavEndpoint("static-a"); u == nil || u.Host != "127.0.0.1:2" {
		t.Fatalf("static-a's endpoint is %v", u)
	}
	if err := cs.DiscoveryV1().EndpointSlices(ns).Delete(context.Background(), "s-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if !svc.Known("static-a") {
		t.Fatal("removing the clashing slice removed the static agent")
	}
}

func TestAgentFromSlices(t *testing.T) {
	c := config.Discovery{}
	l := agentLabel("a")
	for _, tc := range []struct {
		name  string
		es    []*discoveryv1.EndpointSlice
		ready bool
		grpc  string
	}{
		{"lowest ready address", []*discoveryv1.EndpointSlice{slice("1", ns, l, true, "10.0.0.9", "10.0.0.3")}, true, "10.0.0.3:9091"},
		{"ready beats unready", []*discoveryv1.EndpointSlice{slice("1", ns, l, false, "10.0.0.1"), slice("2", ns, l, true, "10.0.0.7")}, true, "10.0.0.7:9091"},
		{"none ready", []*discoveryv1.EndpointSlice{slice("1", ns, l, false, "10.0.0.1")}, false, ""},
		{"not an IP", []*discoveryv1.EndpointSlice{slice("1", ns, l, true, "evil.example")}, false, ""},
		{"FQDN slice", func() []*discoveryv1.EndpointSlice {
			s := slice("1", ns, l, true, "10.0.0.1")
			s.AddressType = discoveryv1.AddressTypeFQDN
			return []*discoveryv1.EndpointSlice{s}
		}(), false, ""},
		{"no grpc port", func() []*discoveryv1.EndpointSlice {
			s := slice("1", ns, l, true, "10.0.0.1")
			s.Ports = s.Ports[1:]
			return []*discoveryv1.EndpointSlice{s}
		}(), false, ""},
		{"IPv6", func() []*discoveryv1.EndpointSlice {
			s := slice("1", ns, l, true, "fd00::5")
			s.AddressType = discoveryv1.AddressTypeIPv6
			return []*discoveryv1.EndpointSlice{s}
		}(), true, "[fd00::5]:9091"},
	} {
		a := Agent("a", tc.es, c)
		if a.Ready != tc.ready || a.GRPC != tc.grpc {
			t.Errorf("%s: ready %v grpc %q, want %v %q", tc.name, a.Ready, a.GRPC, tc.ready, tc.grpc)
		}
	}
}

// Many agents: every one listed, in order, and paged.
func TestManyDiscovered(t *testing.T) {
	cs := fake.NewClientset()
	for i := range 500 {
		if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(context.Background(), slice(fmt.Sprintf("s-%d", i), ns, agentLabel(fmt.Sprintf("agent-%04d", i)), true, fmt.Sprintf("10.2.%d.%d", i/200, i%200+1)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc := registry(t)
	d, err := Start(context.Background(), Options{Client: kube.NewFromClientset(cs, ns), Sink: svc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	eventually(t, "500 agents", func() bool { return len(listed(t, svc)) == 501 })
	ids := svc.AgentIDs()
	if !strings.HasPrefix(ids[0], "agent-0000") || ids[500] != "static-a" {
		t.Fatalf("order: %s … %s", ids[0], ids[500])
	}
}
