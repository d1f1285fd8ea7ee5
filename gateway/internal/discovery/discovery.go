// Package discovery finds agents through the Kubernetes API
// (docs/discovery.md): a client-go informer on the EndpointSlices of the
// gateway's namespace that carry the agent label
// (agentRuntime.discovery.labelKey, the label's value is the agent id),
// which it turns into the mgmt registry's discovered agents. Only ready
// endpoints are used, by the Service port names of the sidecar's gRPC and
// WebDAV listeners; an agent whose slices have no ready endpoint is listed
// UNREACHABLE, and one whose slices are all gone is removed. Which pod
// answers is not trusted from the label: every call to a discovered
// sidecar is mutual TLS whose server certificate must name the agent
// (internal/pki), so a pod that claims another agent's label cannot serve
// as that agent.
package discovery

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/agentworkspace/files/gateway/internal/config"
	"github.com/agentworkspace/files/gateway/internal/kube"
	"github.com/agentworkspace/files/gateway/internal/mgmt"
)

// Sink receives the discovered agents (mgmt.Service).
type Sink interface {
	SetDiscovered(mgmt.Discovered) error
	RemoveDiscovered(id string)
}

// Options configure a Discoverer.
type Options struct {
	Client *kube.Client
	Config config.Discovery
	Sink   Sink
	Logger hclog.Logger
	// Resync is the informer's resync period (0: none; the watch is
	// enough).
	Resync time.Duration
}

// Discoverer watches the agents' EndpointSlices.
type Discoverer struct {
	o        Options
	log      hclog.Logger
	informer cache.SharedIndexInformer
	handler  cache.ResourceEventHandlerRegistration
	stop     context.CancelFunc
	done     chan struct{}
}

const byAgent = "agent"

// Start starts the informer; it runs until Stop or ctx ends. It does not
// wait for the first list: agents appear as it arrives (HasSynced).
func Start(ctx context.Context, o Options) (*Discoverer, error) {
	if o.Client == nil || o.Sink == nil {
		return nil, fmt.Errorf("discovery: a Kubernetes client and a sink are required")
	}
	label := o.Config.Label()
	factory := informers.NewSharedInformerFactoryWithOptions(o.Client.Clientset, o.Resync,
		informers.WithNamespace(o.Client.Namespace),
		// The API server filters: the gateway never sees other slices.
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = label }))
	inf := factory.Discovery().V1().EndpointSlices().Informer()
	if err := inf.AddIndexers(cache.Indexers{byAgent: func(obj any) ([]string, error) {
		if es, ok := obj.(*discoveryv1.EndpointSlice); ok {
			if id := es.Labels[label]; id != "" {
				return []string{id}, nil
			}
		}
		return nil, nil
	}}); err != nil {
		return nil, err
	}
	d := &Discoverer{o: o, log: cmp.Or(o.Logger, hclog.NewNullLogger()), informer: inf, done: make(chan struct{})}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { d.changed(obj) },
		UpdateFunc: func(old, obj any) { d.changed(old); d.changed(obj) },
		DeleteFunc: func(obj any) { d.changed(obj) },
	})
	if err != nil {
		return nil, err
	}
	d.handler = reg
	ctx, d.stop = context.WithCancel(ctx)
	go func() {
		defer close(d.done)
		inf.Run(ctx.Done())
	}()
	return d, nil
}

// HasSynced reports whether the first list has been handled: the handler's
// own HasSynced (client-go: the informer's says only that its cache is
// filled, not that every slice of it reached the registry).
func (d *Discoverer) HasSynced() bool { return d.informer.HasSynced() && d.handler.HasSynced() }

// Stop ends the watch and waits for it; a nil Discoverer (discovery off)
// has nothing to stop.
func (d *Discoverer) Stop() {
	if d == nil {
		return
	}
	d.stop()
	<-d.done
}

// changed recomputes the agent of one (possibly deleted) slice.
func (d *Discoverer) changed(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	id := es.Labels[d.o.Config.Label()]
	if !config.ValidAgentID(id) {
		d.log.Warn("an EndpointSlice's agent label is not an agent id; ignored", "slice", es.Name)
		return
	}
	objs, err := d.informer.GetIndexer().ByIndex(byAgent, id)
	if err != nil {
		return
	}
	if len(objs) == 0 {
		d.o.Sink.RemoveDiscovered(id)
		d.log.Debug("agent gone", "agent", id)
		return
	}
	var slicesOf []*discoveryv1.EndpointSlice
	for _, o := range objs {
		if es, ok := o.(*discoveryv1.EndpointSlice); ok {
			slicesOf = append(slicesOf, es)
		}
	}
	a := Agent(id, slicesOf, d.o.Config)
	if err := d.o.Sink.SetDiscovered(a); err != nil {
		d.log.Warn("a discovered agent could not be added", "agent", id, "error", err)
	}
}

// Agent computes agent id from its EndpointSlices: the first ready
// endpoint (in address order, for a stable choice) of an IP slice that has
// the gRPC port; Ready is false when there is none.
func Agent(id string, es []*discoveryv1.EndpointSlice, c config.Discovery) mgmt.Discovered {
	out := mgmt.Discovered{ID: id, Provider: c.ProviderName(), Sidecar: c.Sidecar()}
	type cand struct {
		addr      string
		grpc, dav int32
	}
	var cands []cand
	for _, s := range es {
		if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		grpcPort, davPort := port(s, c.GRPCPort()), port(s, c.DavPort())
		if grpcPort == 0 {
			continue
		}
		for _, ep := range s.Endpoints {
			if !ready(ep) || len(ep.Addresses) == 0 || net.ParseIP(ep.Addresses[0]) == nil {
				continue
			}
			cands = append(cands, cand{ep.Addresses[0], grpcPort, davPort})
		}
	}
	if len(cands) == 0 {
		return out
	}
	best := slices.MinFunc(cands, func(a, b cand) int { return cmp.Compare(a.addr, b.addr) })
	out.Ready = true
	out.GRPC = net.JoinHostPort(best.addr, fmt.Sprint(best.grpc))
	if best.dav != 0 {
		out.DAV = &url.URL{Scheme: "https", Host: net.JoinHostPort(best.addr, fmt.Sprint(best.dav))}
	}
	return out
}

// ready follows the EndpointSlice API: a nil ready condition means ready
// (the endpoints controller always sets it; terminating endpoints are
// never ready).
func ready(ep discoveryv1.Endpoint) bool {
	return ep.Conditions.Ready == nil || *ep.Conditions.Ready
}

func port(s *discoveryv1.EndpointSlice, name string) int32 {
	for _, p := range s.Ports {
		if p.Name != nil && *p.Name == name && p.Port != nil && (p.Protocol == nil || *p.Protocol == "TCP") {
			return *p.Port
		}
	}
	return 0
}
