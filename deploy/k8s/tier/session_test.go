//go:build k8stier

package tier

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentworkspace/files/internal/restwalk"
)

// The portal's session as the sign-out steps use it, against one gateway
// at url (a process on loopback, or one pod's own address).

// signIn signs in with an admin token and returns the session cookie and
// its CSRF token.
func signIn(t *testing.T, url, token string) (cookie, csrf string) {
	t.Helper()
	r := restwalk.Must(t, http.StatusOK, restwalk.Client{URL: url}.Do(t, http.MethodPost, "/api/v1/agent-gateway/session",
		map[string]string{"token": token}, "Authorization", ""), "sign-in at "+url)
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "awf_session" {
			cookie = c.Value
		}
	}
	csrf, _ = r.JSON["csrf_token"].(string)
	if cookie == "" || csrf == "" {
		t.Fatalf("sign-in at %s gave no cookie or CSRF token: %s", url, r.Body)
	}
	return cookie, csrf
}

// withCookie lists the agents with a session cookie only.
func withCookie(t *testing.T, url, cookie string) restwalk.Reply {
	t.Helper()
	r, err := restwalk.Client{URL: url}.Try(http.MethodGet, "/api/v1/agent-gateway/agents", nil,
		"Authorization", "", "Cookie", "awf_session="+cookie)
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	return r
}

// signOut ends the session of cookie at url.
func signOut(t *testing.T, url, cookie, csrf string) {
	t.Helper()
	restwalk.Must(t, http.StatusNoContent, restwalk.Client{URL: url}.Do(t, http.MethodDelete, "/api/v1/agent-gateway/session", nil,
		"Authorization", "", "Cookie", "awf_session="+cookie, "X-CSRF-Token", csrf), "sign-out at "+url)
}

// refusedWithin waits for url to refuse cookie (401), at most 2 s, and
// returns how long it took; any answer but 200 or 401 ends the test.
func refusedWithin(t *testing.T, url, cookie, what string) time.Duration {
	t.Helper()
	t0 := time.Now()
	for {
		r := withCookie(t, url, cookie)
		if r.Status == http.StatusUnauthorized {
			return time.Since(t0)
		}
		if r.Status != http.StatusOK {
			t.Fatalf("%s: %d %s (reason %s)", what, r.Status, r.Body, r.Reason())
		}
		if time.Since(t0) > 2*time.Second {
			t.Fatalf("%s: the copied cookie is still accepted 2 s after its sign-out", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
