package sidecar

// Usage (issue #25; davfs/usage): one cache of workspace totals per
// sidecar, made stale by the change feed: the watcher's published changes
// and overflows (watch.Config.Observer), every successful mutating gRPC
// call (usageInterceptor) and WebDAV write (dav.Options.Usage), and, for
// what none of them sees (an agent's write in a directory no stream
// watches), the cache's MaxAge. Figures: bytes and files per scope (sums
// over the workspaces counted; two scopes, so the labels stay bounded)
// and the volumes' size and free space.

import (
	"context"
	"errors"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/usage"
)

// readOnlyMethods are the gRPC methods that change nothing on the volume.
var readOnlyMethods = map[string]bool{
	"ListProjects": true, "ListEntries": true, "GetFile": true, "GetUsage": true,
	"ListCheckpoints": true, "CompareCheckpoint": true, "CreateCheckpoint": true, "DeleteCheckpoint": true,
}

// usageInterceptor marks the workspace of every successful mutating call
// changed (a call naming no workspace, e.g. a project's create or delete,
// marks every project).
func usageInterceptor(c *usage.Cache) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		m := info.FullMethod[strings.LastIndexByte(info.FullMethod, '/')+1:]
		if err == nil && !readOnlyMethods[m] {
			if r, ok := req.(interface {
				GetWorkspace() *workspacev1.WorkspaceRef
			}); ok && r.GetWorkspace() != nil {
				c.Changed(wsOf(r.GetWorkspace()))
			} else {
				c.ChangedAll(davfs.ScopeProject)
			}
		}
		return resp, err
	}
}

func wsOf(ref *workspacev1.WorkspaceRef) davfs.Workspace {
	if ref.GetScope() == workspacev1.WorkspaceScope_GLOBAL {
		return davfs.Workspace{Scope: davfs.ScopeGlobal}
	}
	return davfs.Workspace{Scope: davfs.ScopeProject, Project: ref.GetProjectName()}
}

// usageCollector exports the cache's figures at scrape time.
type usageCollector struct {
	c                               *usage.Cache
	bytes, files, counted, vol, fre *prometheus.Desc
	scans, hits, overflows          *prometheus.Desc
}

func newUsageCollector(c *usage.Cache) *usageCollector {
	return &usageCollector{c: c,
		bytes:     prometheus.NewDesc("sidecar_usage_bytes", "Bytes of regular files in the workspaces counted (cached and fresh), by scope (project, global).", []string{"scope"}, nil),
		files:     prometheus.NewDesc("sidecar_usage_files", "Regular files in the workspaces counted (cached and fresh), by scope.", []string{"scope"}, nil),
		counted:   prometheus.NewDesc("sidecar_usage_workspaces", "Workspaces whose totals are cached and fresh, by scope.", []string{"scope"}, nil),
		vol:       prometheus.NewDesc("sidecar_volume_size_bytes", "Size of the volume (statfs), by volume (projects, global).", []string{"volume"}, nil),
		fre:       prometheus.NewDesc("sidecar_volume_free_bytes", "Free space of the volume for an unprivileged writer (statfs f_bavail), by volume.", []string{"volume"}, nil),
		scans:     prometheus.NewDesc("sidecar_usage_scans_total", "Walks of a workspace to count its usage.", nil, nil),
		hits:      prometheus.NewDesc("sidecar_usage_cache_hits_total", "Usage answered from the cache.", nil, nil),
		overflows: prometheus.NewDesc("sidecar_usage_overflows_total", "Change-feed overflows that made every cached total stale.", nil, nil),
	}
}

func (u *usageCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{u.bytes, u.files, u.counted, u.vol, u.fre, u.scans, u.hits, u.overflows} {
		ch <- d
	}
}

func (u *usageCollector) Collect(ch chan<- prometheus.Metric) {
	var sum [2]usage.Totals
	var n [2]int
	u.c.Each(func(ws davfs.Workspace, t usage.Totals) {
		i := 0
		if ws.Scope == davfs.ScopeGlobal {
			i = 1
		}
		sum[i].Bytes += t.Bytes
		sum[i].Files += t.Files
		n[i]++
	})
	for i, scope := range []string{"project", "global"} {
		ch <- prometheus.MustNewConstMetric(u.bytes, prometheus.GaugeValue, float64(sum[i].Bytes), scope)
		ch <- prometheus.MustNewConstMetric(u.files, prometheus.GaugeValue, float64(sum[i].Files), scope)
		ch <- prometheus.MustNewConstMetric(u.counted, prometheus.GaugeValue, float64(n[i]), scope)
	}
	for _, v := range []struct {
		name  string
		scope davfs.Scope
	}{{"projects", davfs.ScopeProject}, {"global", davfs.ScopeGlobal}} {
		if vol, err := u.c.Volume(v.scope); err == nil {
			ch <- prometheus.MustNewConstMetric(u.vol, prometheus.GaugeValue, float64(vol.Size), v.name)
			ch <- prometheus.MustNewConstMetric(u.fre, prometheus.GaugeValue, float64(vol.Free), v.name)
		}
	}
	st := u.c.Stats()
	ch <- prometheus.MustNewConstMetric(u.scans, prometheus.CounterValue, float64(st.Scans))
	ch <- prometheus.MustNewConstMetric(u.hits, prometheus.CounterValue, float64(st.Hits))
	ch <- prometheus.MustNewConstMetric(u.overflows, prometheus.CounterValue, float64(st.Overflows))
}

// registerUsageMetrics registers the usage figures.
func (s *Sidecar) registerUsageMetrics() error {
	if err := s.registry.Register(newUsageCollector(s.usage)); err != nil {
		return errors.Join(errors.New("usage metrics"), err)
	}
	return nil
}
