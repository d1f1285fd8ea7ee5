package dav

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Concurrent PUTs to one name with the same If-Match queue: one wins and
// every other sees its precondition fail (412), never x/net/webdav's
// temporary lock (423); the file holds the winner's body.
func TestSameIfMatchPutsQueue(t *testing.T) {
	e := newEnv(t, nil)
	const n = 16
	for round := range 4 {
		tag := e.put("/projects/demo/f.txt", fmt.Sprintf("base%d", round))
		codes := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, err := http.NewRequest("PUT", e.url+"/projects/demo/f.txt", strings.NewReader(fmt.Sprintf("r%d-%d", round, i)))
				if err != nil {
					t.Error(err)
					return
				}
				req.Header.Set("If-Match", tag)
				resp, err := e.client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				codes[i] = resp.StatusCode
			}()
		}
		wg.Wait()
		winner, n412 := -1, 0
		for i, c := range codes {
			switch {
			case c >= 200 && c < 300:
				if winner >= 0 {
					t.Fatalf("round %d: two winners: %v", round, codes)
				}
				winner = i
			case c == http.StatusPreconditionFailed:
				n412++
			default:
				t.Fatalf("round %d: status %d (all %v)", round, c, codes)
			}
		}
		if winner < 0 || n412 != n-1 {
			t.Fatalf("round %d: statuses %v", round, codes)
		}
		if got, _ := e.hostFile("f.txt"); got != fmt.Sprintf("r%d-%d", round, winner) {
			t.Fatalf("round %d: f.txt %q, winner %d", round, got, winner)
		}
	}
	// A client's lock still decides: a PUT without its token is 423.
	tok := e.lock("/projects/demo/f.txt", map[string]string{"Depth": "0"}, 200)
	e.want("PUT", "/projects/demo/f.txt", nil, "x", 423)
	e.want("PUT", "/projects/demo/f.txt", map[string]string{"If": "(" + tok + ")"}, "y", 201)
}
