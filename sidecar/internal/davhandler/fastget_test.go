package davhandler

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPlainGetMatchesServeContent: a small file's GET and HEAD, answered
// from memory without http.ServeContent when the request has no Range or
// conditional header, carry exactly the status, headers and body that
// http.ServeContent gives for the same content (served here by a reference
// server on loopback); requests with those headers still match it too.
func TestPlainGetMatchesServeContent(t *testing.T) {
	e := newEnv(t, nil)
	dir := filepath.Join(e.projects, "demo")
	files := map[string][]byte{
		"a.txt":     bytes.Repeat([]byte("a"), 1024),
		"b.bin":     {0, 1, 2, 0xff, 0xfe},
		"empty.txt": {},
		"epoch.md":  []byte("# at the Unix epoch\n"),
		"old.json":  []byte(`{"year":1999}`),
		"noext":     []byte("no extension"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, at := range map[string]time.Time{"epoch.md": time.Unix(0, 0), "old.json": time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC)} {
		if err := os.Chtimes(filepath.Join(dir, name), at, at); err != nil {
			t.Fatal(err)
		}
	}

	// The reference: the same pre-set headers, then http.ServeContent.
	var ref struct {
		etag, ctype string
		mod         time.Time
		data        []byte
	}
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["X-Request-Id"] = []string{r.Header.Get("X-Request-ID")}
		h["Etag"] = []string{ref.etag}
		h["Content-Type"] = []string{ref.ctype}
		h["X-Content-Type-Options"] = []string{"nosniff"}
		http.ServeContent(w, r, "", ref.mod, bytes.NewReader(ref.data))
	}))
	defer rs.Close()

	get := func(url, method string, hdr map[string]string) (*http.Response, []byte) {
		t.Helper()
		h := map[string]string{"X-Request-ID": "fixed-id"}
		for k, v := range hdr {
			h[k] = v
		}
		resp, b := e.doURL(method, url, h, nil)
		return resp, []byte(b)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	checked := 0
	for _, name := range names {
		resp, _ := get(e.url+"/projects/demo/"+name, http.MethodHead, nil)
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		ref.etag, ref.ctype, ref.mod, ref.data = resp.Header.Get("Etag"), resp.Header.Get("Content-Type"), fi.ModTime(), files[name]
		if ref.etag == "" || ref.ctype == "" {
			t.Fatalf("%s: no ETag or Content-Type: %v", name, resp.Header)
		}
		past, future := "Mon, 01 Jan 1990 00:00:00 GMT", "Fri, 01 Jan 2100 00:00:00 GMT"
		for _, hdr := range []map[string]string{
			nil,
			{"Range": "bytes=0-2"},
			{"Range": "bytes=1-1,3-3"},
			{"If-None-Match": ref.etag},
			{"If-None-Match": `"other"`},
			{"If-Match": `"other"`},
			{"If-Match": ref.etag},
			{"If-Modified-Since": future},
			{"If-Modified-Since": past},
			{"If-Unmodified-Since": past},
			{"If-Range": ref.etag, "Range": "bytes=0-0"},
			{"Accept-Encoding": "gzip", "User-Agent": "test"},
		} {
			for _, method := range []string{http.MethodGet, http.MethodHead} {
				got, gotBody := get(e.url+"/projects/demo/"+name, method, hdr)
				want, wantBody := get(rs.URL+"/x", method, hdr)
				// Multipart boundaries are random: compare with them replaced.
				gotBody, gotCT := unboundary(gotBody, got.Header.Get("Content-Type"))
				wantBody, wantCT := unboundary(wantBody, want.Header.Get("Content-Type"))
				got.Header.Set("Content-Type", gotCT)
				want.Header.Set("Content-Type", wantCT)
				if got.StatusCode != want.StatusCode || !bytes.Equal(gotBody, wantBody) {
					t.Fatalf("%s %s %v: status %d body %q, ServeContent %d %q", method, name, hdr, got.StatusCode, gotBody, want.StatusCode, wantBody)
				}
				if got.ContentLength != want.ContentLength {
					t.Fatalf("%s %s %v: Content-Length %d, ServeContent %d", method, name, hdr, got.ContentLength, want.ContentLength)
				}
				gh, wh := got.Header.Clone(), want.Header.Clone()
				gh.Del("Date")
				wh.Del("Date")
				if !equalHeaders(gh, wh) {
					t.Fatalf("%s %s %v:\n got %v\nwant %v", method, name, hdr, gh, wh)
				}
				checked++
			}
		}
	}
	if checked != len(files)*12*2 {
		t.Fatalf("%d comparisons", checked)
	}
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// unboundary replaces a multipart/byteranges boundary in body and ct.
func unboundary(body []byte, ct string) ([]byte, string) {
	const p = "multipart/byteranges; boundary="
	if !strings.HasPrefix(ct, p) {
		return body, ct
	}
	return bytes.ReplaceAll(body, []byte(ct[len(p):]), []byte("BOUNDARY")), p + "BOUNDARY"
}

// TestPlainGetPooledBuffers: small files read into pooled buffers come out
// whole and unmixed under concurrent GETs of files of different sizes
// (around the pooled buffer's size too), with and without Range requests.
func TestPlainGetPooledBuffers(t *testing.T) {
	e := newEnv(t, nil)
	sizes := []int{1, 100, 1024, 4097, smallBody - 1, smallBody, smallBody + 1, 60 << 10}
	want := make([][]byte, len(sizes))
	for i, n := range sizes {
		want[i] = bytes.Repeat([]byte{byte('a' + i)}, n)
		if err := os.WriteFile(filepath.Join(e.projects, "demo", fmt.Sprintf("f%d.txt", i)), want[i], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 30 * time.Second}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 150; j++ {
				i := (g + j) % len(sizes)
				req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/projects/demo/f%d.txt", e.url, i), nil)
				exp := want[i]
				if j%5 == 0 {
					req.Header.Set("Range", "bytes=0-0")
					exp = want[i][:1]
				}
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || !bytes.Equal(b, exp) {
					errs <- fmt.Errorf("f%d (range %v): %d bytes, want %d (%v)", i, j%5 == 0, len(b), len(exp), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
