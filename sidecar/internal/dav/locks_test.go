package dav_test

// WebDAV lock caps (issue #23, part 6) through the real agent-sidecar
// binary: one operator cannot fill the lock table, and no lock outlives
// davServer.maxLockTimeout.

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentworkspace/files/contracts/errtable"
	"github.com/agentworkspace/files/internal/davwire"
	"github.com/agentworkspace/files/sidecar"
	"github.com/agentworkspace/files/sidecar/sidecartest"
)

const lockInfo = `<?xml version="1.0" encoding="utf-8"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>o</D:owner></D:lockinfo>`

func TestLockLimitPerOperatorThroughTheBinary(t *testing.T) {
	const perOp = 3
	sc := sidecartest.Start(t, sidecartest.Options{Configure: func(c *sidecar.Config) {
		c.DavServer.MaxLocksPerOperator, c.DavServer.MaxLockTimeout = perOp, "2m"
	}})
	if err := os.MkdirAll(filepath.Join(sc.ProjectsDir, "demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range perOp + 2 {
		if err := os.WriteFile(filepath.Join(sc.ProjectsDir, "demo", fmt.Sprintf("f%d.txt", i)), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sidecartest.Chown(t, sc.ProjectsDir)
	lock := func(op string, i int, timeout string) (int, string, string, string) {
		t.Helper()
		req, err := http.NewRequest("LOCK", fmt.Sprintf("%s/projects/demo/f%d.txt", sc.PlainDavURL(), i), strings.NewReader(lockInfo))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(davwire.OperatorHeader, op)
		req.Header.Set("Timeout", timeout)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header.Get(errtable.ReasonHeader), string(b), resp.Header.Get("Lock-Token")
	}

	var tokens []string
	for i := range perOp {
		st, _, body, tok := lock("mallory", i, "Infinite")
		if st != http.StatusOK {
			t.Fatalf("lock %d: %d %s", i, st, body)
		}
		// An hour-long (or infinite) lock is capped at maxLockTimeout.
		if !strings.Contains(body, "Second-120") {
			t.Errorf("lock %d not capped at 2m: %s", i, body)
		}
		tokens = append(tokens, tok)
	}
	st, reason, body, _ := lock("mallory", perOp, "Second-3600")
	if st != http.StatusInsufficientStorage || reason != "LOCK_LIMIT" || !strings.Contains(body, "this operator holds as many locks") {
		t.Fatalf("lock %d of one operator: %d %q %q", perOp+1, st, reason, body)
	}
	// Another operator still gets one.
	if st, _, body, _ := lock("alice", perOp, "Second-60"); st != http.StatusOK {
		t.Fatalf("another operator's lock: %d %s", st, body)
	}
	// An unlock gives the operator room again.
	req, _ := http.NewRequest("UNLOCK", sc.PlainDavURL()+"/projects/demo/f0.txt", nil)
	req.Header.Set("Lock-Token", tokens[0])
	req.Header.Set(davwire.OperatorHeader, "mallory")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("UNLOCK: %d", resp.StatusCode)
	}
	if st, _, body, _ := lock("mallory", perOp+1, "Second-60"); st != http.StatusOK {
		t.Fatalf("lock after an unlock: %d %s", st, body)
	}
}
