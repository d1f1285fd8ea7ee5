package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// bodyService answers the body routes and records that a call reached it.
type bodyService struct {
	workspacev1.UnimplementedWorkspaceManagementServiceServer
	calls int
	file  *workspacev1.GetFileResponse
}

func (b *bodyService) CreateProject(context.Context, *workspacev1.CreateAgentProjectRequest) (*workspacev1.Project, error) {
	b.calls++
	return &workspacev1.Project{Name: "p"}, nil
}

func (b *bodyService) UpdateProjectFile(context.Context, *workspacev1.UpdateProjectFileRequest) (*workspacev1.Entry, error) {
	b.calls++
	return &workspacev1.Entry{Path: "x"}, nil
}

func (b *bodyService) CreateProjectEntry(context.Context, *workspacev1.CreateProjectEntryRequest) (*workspacev1.Entry, error) {
	b.calls++
	return &workspacev1.Entry{Path: "x"}, nil
}

func (b *bodyService) GetProjectFile(context.Context, *workspacev1.GetProjectFileRequest) (*workspacev1.GetFileResponse, error) {
	return b.file, nil
}

type errorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Details []struct {
		Reason string `json:"reason"`
	} `json:"details"`
}

// Bodies the decoder refuses: a sentence for people and the reason that
// fits, never protojson's "proto: (line 1:12): ..."; nothing reaches the
// service.
func TestBodyRefusals(t *testing.T) {
	svc := &bodyService{}
	s := newServerWith(t, svc)
	files := APIPrefix + "/agents/codex-a/projects/files"
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		reason, message          string
	}{
		{"not JSON", http.MethodPut, files, `{"path":`, 400, "INVALID_ARGUMENT", "the request body is not valid JSON"},
		{"garbage", http.MethodPut, files, `hello`, 400, "INVALID_ARGUMENT", "the request body is not valid JSON"},
		{"unknown field", http.MethodPost, APIPrefix + "/agents/codex-a/projects", `{"name":"x","operator":"mallory"}`, 400, "INVALID_ARGUMENT", `the request body does not fit this call: unknown field "operator"`},
		{"wrong type", http.MethodPut, files, `{"path":5}`, 400, "INVALID_ARGUMENT", "the request body does not fit this call: "},
		{"path not UTF-8", http.MethodPut, files, "{\"path\":\"a\xffb\",\"content\":\"x\"}", 400, "INVALID_PATH", "path is not valid UTF-8"},
		{"project not UTF-8", http.MethodPut, files, "{\"workspace\":{\"scope\":\"PROJECT\",\"project_name\":\"\xc3\"},\"path\":\"a\"}", 400, "INVALID_WORKSPACE", "workspace.project_name is not valid UTF-8"},
		{"content not UTF-8", http.MethodPut, files, "{\"path\":\"a\",\"content\":\"\xed\xa0\x80\"}", 400, "INVALID_ARGUMENT", "content is not valid UTF-8"},
		{"name not UTF-8", http.MethodPost, APIPrefix + "/agents/codex-a/projects", "{\"name\":\"\xfe\"}", 400, "INVALID_NAME", "name is not valid UTF-8"},
		{"parent not UTF-8", http.MethodPost, APIPrefix + "/agents/codex-a/projects/entries", "{\"parent_path\":\"\xff\",\"name\":\"n\"}", 400, "INVALID_PATH", "parent_path is not valid UTF-8"},
		{"key not UTF-8", http.MethodPut, files, "{\"pa\xffth\":\"a\"}", 400, "INVALID_ARGUMENT", "the request body is not valid UTF-8"},
		{"too large", http.MethodPut, files, `{"path":"a","content":"` + strings.Repeat("x", MaxAPIBody) + `"}`, 413, "TOO_LARGE", "the request body is larger than 8 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			svc.calls = 0
			r := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
			r.Header.Set("Authorization", "Bearer tok")
			w := serve(s, r)
			var eb errorBody
			if err := json.Unmarshal(w.Body.Bytes(), &eb); err != nil {
				t.Fatalf("%d, body not JSON: %v: %.200s", w.Code, err, w.Body)
			}
			if w.Code != c.status || len(eb.Details) != 1 || eb.Details[0].Reason != c.reason || !strings.HasPrefix(eb.Message, c.message) {
				t.Errorf("%d %+v, want %d %s %q", w.Code, eb, c.status, c.reason, c.message)
			}
			if strings.Contains(eb.Message, "proto:") || strings.Contains(eb.Message, "line 1") {
				t.Errorf("raw decoder text: %q", eb.Message)
			}
			if svc.calls != 0 {
				t.Errorf("the service was called %d times", svc.calls)
			}
		})
	}
	// An empty body is an empty request, as generated.
	r := httptest.NewRequest(http.MethodPut, files, nil)
	r.Header.Set("Authorization", "Bearer tok")
	if w := serve(s, r); w.Code != 200 || svc.calls != 1 {
		t.Errorf("empty body: %d %s (calls %d)", w.Code, w.Body, svc.calls)
	}
}

// The REST JSON is protojson's with proto names and unpopulated fields
// (the wire format the portal reads), and every /api/ response is no-store.
func TestWireFormatAndNoStore(t *testing.T) {
	ts := timestamppb.New(time.Date(2026, 11, 30, 10, 0, 0, 123000000, time.UTC))
	file := &workspacev1.GetFileResponse{
		Entry:   &workspacev1.Entry{Name: "a.txt", Path: "d/a.txt", Type: workspacev1.EntryType_ENTRY_TYPE_FILE, Size: 3, ModifiedAt: ts, Revision: "r1", Editable: true},
		Content: "é\"\n<",
	}
	s := newServerWith(t, &bodyService{file: file})
	r := httptest.NewRequest(http.MethodGet, APIPrefix+"/agents/codex-a/projects/files?workspace.scope=GLOBAL&path=d/a.txt", nil)
	r.Header.Set("Authorization", "Bearer tok")
	w := serve(s, r)
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	want, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	var got, exp any
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &exp); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("body\n got %s\nwant %s", w.Body, want)
	}
	if !strings.Contains(w.Body.String(), `"non_editable_reason"`) {
		t.Errorf("unpopulated field non_editable_reason not emitted: %s", w.Body)
	}
	if w.Header().Get("Content-Length") == "" {
		t.Error("no Content-Length (runtime.WithWriteContentLength)")
	}
	for _, req := range []*http.Request{
		r,
		httptest.NewRequest(http.MethodGet, APIPrefix+"/agents/codex-a/projects", nil),                 // 401
		httptest.NewRequest(http.MethodGet, APIPrefix+"/agents/codex-a/projects/entries", nil),         // 401
		httptest.NewRequest(http.MethodPost, APIPrefix+"/session", strings.NewReader(`{"token":"x"}`)), // 401
		httptest.NewRequest(http.MethodGet, APIPrefix+"/session", nil),                                 // whoami, 401
		authed(httptest.NewRequest(http.MethodGet, APIPrefix+"/session", nil)),                         // whoami, 200
		httptest.NewRequest(http.MethodGet, "/api/nothing", nil),                                       // 404
	} {
		if w := serve(s, req); w.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s %s: %d, Cache-Control %q", req.Method, req.URL.Path, w.Code, w.Header().Get("Cache-Control"))
		}
	}
	if w := serve(s, httptest.NewRequest(http.MethodGet, "/", nil)); w.Header().Get("Cache-Control") == "no-store" {
		t.Error("the portal's files are no-store too")
	}
}

// The REST codec's Marshal is runtime.JSONPb's, byte for byte, for
// messages small and large, with unpopulated fields and escapes; a
// non-message value goes to JSONPb itself.
func TestMarshalMatchesJSONPb(t *testing.T) {
	codec := newMarshaler().(restJSON)
	ts := timestamppb.New(time.Date(2026, 12, 1, 13, 0, 0, 5, time.UTC))
	entry := &workspacev1.Entry{Name: "a\"b.txt", Path: "dir/a\"b.txt", Size: 3, ModifiedAt: ts, Revision: "r1", Editable: true}
	for name, m := range map[string]any{
		"empty":       &workspacev1.GetFileResponse{},
		"entry":       entry,
		"file":        &workspacev1.GetFileResponse{Entry: entry, Content: strings.Repeat("line \"quoted\" \\ tab\t é <>&\n", 4000)},
		"listing":     &workspacev1.ListEntriesResponse{Entries: []*workspacev1.Entry{entry, entry}, DirectoryRevision: "d"},
		"non-message": map[string]string{"k": "v"},
	} {
		got, err := codec.Marshal(m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := codec.JSONPb.Marshal(m)
		if err != nil {
			t.Fatalf("%s: JSONPb: %v", name, err)
		}
		if string(got) != string(want) {
			t.Errorf("%s: Marshal differs from runtime.JSONPb:\n got %.200s\nwant %.200s", name, got, want)
		}
	}
}

func authed(r *http.Request) *http.Request {
	r.Header.Set("Authorization", "Bearer tok")
	return r
}
