package dav

// RFC 4331 quota properties (issue #25, "Usage"): DAV:quota-used-bytes and
// DAV:quota-available-bytes on a collection, answered only when a PROPFIND
// names them (rclone about, Finder, davfs2 ask for them by name; allprop
// never carries them, as RFC 4331 §3 asks). Inside a workspace the quota
// space is that workspace (a project, or Global): used is what
// davfs/usage counts of it (from its cache), available the volume's free
// space (statfs on its root fd). On the virtual levels ("/", "/projects",
// "/global") the quota space is the volume: used is its size less its free
// space. A figure that cannot be had is left out (404 in the propstat),
// never answered 0.

import (
	"bytes"
	"context"
	"encoding/xml"
	"strconv"
	"sync/atomic"

	"golang.org/x/net/webdav"

	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/usage"
	"github.com/agentworkspace/files/internal/davwire"
)

var (
	quotaUsedName  = xml.Name{Space: "DAV:", Local: "quota-used-bytes"}
	quotaAvailName = xml.Name{Space: "DAV:", Local: "quota-available-bytes"}
)

// Quota is the request's part in the quota properties: the sidecar's
// usage cache, and whether the PROPFIND asked for them.
type Quota struct {
	Usage *usage.Cache
	FS    *davfs.FS
	asked atomic.Bool
}

// askedFor reports whether a PROPFIND body names a quota property (a
// plain byte look: x/net/webdav parses the body itself).
func askedFor(body []byte) bool {
	return bytes.Contains(body, []byte("quota-used-bytes")) || bytes.Contains(body, []byte("quota-available-bytes"))
}

// props returns the quota properties of collection t, nil when none were
// asked for or none is known.
func (q *Quota) props(ctx context.Context, t target) map[xml.Name]webdav.Property {
	if q == nil || q.Usage == nil || q.FS == nil || !q.asked.Load() {
		return nil
	}
	scope := davfs.ScopeProject
	if t.ws.Scope == davfs.ScopeGlobal || t.level == levelGlobalRoot {
		scope = davfs.ScopeGlobal
	}
	vol, verr := usage.VolumeOf(q.FS, scope)
	out := map[xml.Name]webdav.Property{}
	put := func(n xml.Name, v int64) {
		out[n] = webdav.Property{XMLName: n, InnerXML: []byte(strconv.FormatInt(v, 10))}
	}
	if verr == nil {
		put(quotaAvailName, vol.Free)
	}
	switch {
	case t.level == levelWorkspace:
		if tot, err := q.Usage.Get(ctx, t.ws); err == nil {
			put(quotaUsedName, tot.Bytes)
		}
	case t.level == levelGlobalRoot:
		if tot, err := q.Usage.Get(ctx, davfs.Workspace{Scope: davfs.ScopeGlobal}); err == nil {
			put(quotaUsedName, tot.Bytes)
		}
	case verr == nil:
		put(quotaUsedName, vol.Size-vol.Free)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// usageChanged tells the usage cache which workspaces a write touched
// (its source and destination), whatever its outcome: a failed COPY or
// MOVE may have removed its destination.
func (q *request) usageChanged() {
	u := q.h.opts.Usage
	if u == nil || !davwire.Methods[q.r.Method] {
		return
	}
	for _, name := range []string{q.src, q.dst} {
		if name == "" {
			continue
		}
		if t, err := parse(name); err == nil && t.level == levelWorkspace {
			u.Changed(t.ws)
		}
	}
}
