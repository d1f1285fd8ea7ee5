package k8s

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// GOMEMLIMIT (issue #23, part 5): the Go runtime's soft limit is set on the
// sidecar and the gateway, below the container's memory limit with room for
// what is not heap (60 to 90 % of it).
func TestGoMemLimitBelowMemoryLimit(t *testing.T) {
	r := render(t)
	check := func(where string, c *corev1.Container) {
		t.Helper()
		limit := c.Resources.Limits.Memory().Value()
		var soft int64 = -1
		for _, e := range c.Env {
			if e.Name == "GOMEMLIMIT" {
				soft = goMemLimit(e.Value)
			}
		}
		switch {
		case soft < 0:
			t.Errorf("%s/%s: GOMEMLIMIT unset or not a Go memory limit", where, c.Name)
		case limit <= 0:
			t.Errorf("%s/%s: no memory limit", where, c.Name)
		case soft*10 > limit*9 || soft*10 < limit*6:
			t.Errorf("%s/%s: GOMEMLIMIT %d is not 60-90 %% of the memory limit %d", where, c.Name, soft, limit)
		}
	}
	for _, a := range agents {
		d := r.deployments[a+"-agent"]
		if d == nil {
			t.Fatalf("no Deployment %s-agent", a)
		}
		check(d.Name, container(t, d, "agent-sidecar"))
	}
	gw := r.deployments["agent-gateway"]
	if gw == nil {
		t.Fatal("no Deployment agent-gateway")
	}
	check(gw.Name, container(t, gw, "agent-gateway"))
}

// goMemLimit parses a GOMEMLIMIT value as the Go runtime does (bytes, or a
// number with B, KiB, MiB, GiB, TiB); -1 for anything else.
func goMemLimit(v string) int64 {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}, {"", 1}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			x, err := strconv.ParseInt(n, 10, 64)
			if err != nil || x < 0 {
				return -1
			}
			return x * u.mult
		}
	}
	return -1
}

func TestGoMemLimitParse(t *testing.T) {
	for in, want := range map[string]int64{"400MiB": 400 << 20, "1GiB": 1 << 30, "536870912": 536870912, "12B": 12, "400MB": -1, "": -1, "x": -1} {
		if got := goMemLimit(in); got != want {
			t.Errorf("goMemLimit(%q) = %d, want %d", in, got, want)
		}
	}
}
