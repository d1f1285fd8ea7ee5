package mgmt

import (
	"fmt"
	"testing"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

func agentsNamed(n int) []*workspacev1.Agent {
	var all []*workspacev1.Agent
	for i := range n {
		all = append(all, &workspacev1.Agent{AgentId: fmt.Sprintf("agent-%04d", i)})
	}
	return all
}

// Walking every page returns every agent exactly once, in order; total is
// the same on every page; the query filters case-insensitively.
func TestPageAgentsWalk(t *testing.T) {
	all := agentsNamed(250)
	for _, c := range []struct {
		size  int32
		query string
		want  int
	}{{0, "", 250}, {7, "", 250}, {1000, "", 250}, {5000, "", 250}, {10, "AGENT-01", 100}, {3, "0249", 1}, {4, "nope", 0}} {
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 300 {
				t.Fatalf("size %d: no last page", c.size)
			}
			r, err := pageAgents(all, &workspacev1.ListAgentsRequest{PageSize: c.size, Cursor: cursor, Query: c.query})
			if err != nil {
				t.Fatal(err)
			}
			if int(r.Total) != c.want {
				t.Fatalf("size %d query %q: total %d, want %d", c.size, c.query, r.Total, c.want)
			}
			if c.size > 0 && len(r.Agents) > int(min(c.size, maxAgentPage)) {
				t.Fatalf("page of %d agents, asked %d", len(r.Agents), c.size)
			}
			for _, a := range r.Agents {
				got = append(got, a.AgentId)
			}
			if r.NextCursor == "" {
				break
			}
			cursor = r.NextCursor
		}
		if len(got) != c.want {
			t.Fatalf("size %d query %q: %d agents, want %d", c.size, c.query, len(got), c.want)
		}
		for i := 1; i < len(got); i++ {
			if got[i-1] >= got[i] {
				t.Fatalf("out of order or repeated: %s then %s", got[i-1], got[i])
			}
		}
	}
}

// An agent removed between pages does not make the next page skip or
// repeat anyone.
func TestPageAgentsCursorSurvivesRemoval(t *testing.T) {
	all := agentsNamed(10)
	r, err := pageAgents(all, &workspacev1.ListAgentsRequest{PageSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	shrunk := append(append([]*workspacev1.Agent{}, all[:3]...), all[4:]...) // agent-0003 (the cursor) gone
	r2, err := pageAgents(shrunk, &workspacev1.ListAgentsRequest{PageSize: 4, Cursor: r.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Agents[0].AgentId != "agent-0004" {
		t.Fatalf("next page starts at %s, want agent-0004", r2.Agents[0].AgentId)
	}
}

func TestPageAgentsRefusesBadInput(t *testing.T) {
	for _, req := range []*workspacev1.ListAgentsRequest{
		{PageSize: -1},
		{Cursor: "!!"},
		{Cursor: "eA"}, // "x": not ours
		{Query: string(make([]byte, 300))},
	} {
		if _, err := pageAgents(agentsNamed(3), req); err == nil {
			t.Errorf("%v: accepted", req)
		}
	}
}
