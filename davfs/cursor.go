package davfs

import (
	"encoding/base64"
	"encoding/json"
)

// A cursor is base64url(JSON) of where the previous page ended plus what it
// is valid for: the same workspace, directory path and directory revision.
// It carries no secret and grants nothing: it only positions the next page
// of a listing the caller may read anyway. ListProjects cursors carry no
// revision: the projects page continues after the last name.
type cursorData struct {
	V     int    `json:"v"`
	Scope Scope  `json:"s"`           // 0 for ListProjects
	Proj  string `json:"p,omitempty"` // project of a PROJECT workspace
	Dir   string `json:"d,omitempty"`
	Rev   string `json:"r,omitempty"` // directory revision
	IsDir bool   `json:"k,omitempty"` // the last entry was a directory
	Name  string `json:"n"`           // the last entry's name
}

const (
	cursorVersion = 1
	maxCursorLen  = 16 << 10 // a 4096-byte path plus a name, in base64 JSON
)

func encodeCursor(c cursorData) string {
	c.V = cursorVersion
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursorData, error) {
	bad := newErr(CodeInvalidArgument, ReasonInvalidCursor, nil, "invalid cursor")
	if len(s) > maxCursorLen {
		return cursorData{}, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursorData{}, bad
	}
	var c cursorData
	if err := json.Unmarshal(b, &c); err != nil || c.V != cursorVersion || c.Name == "" {
		return cursorData{}, bad
	}
	return c, nil
}

func errCursorStale() *Error {
	return newErr(CodeAborted, ReasonCursorStale, nil, "the directory changed since the cursor was issued; list again from the first page")
}

// pageSize applies the default and the maximum (above it:
// ResourceExhausted/PAGE_SIZE_TOO_LARGE, never a silent clamp).
func (f *FS) pageSize(n int) (int, error) {
	switch {
	case n == 0:
		return f.cfg.DefaultPageSize, nil
	case n < 0:
		return 0, newErr(CodeInvalidArgument, ReasonInvalidArgument, nil, "page_size must not be negative")
	case n > f.cfg.MaxPageSize:
		return 0, newErr(CodeResourceExhausted, ReasonPageSizeTooLarge, nil, "page_size must be at most %d", f.cfg.MaxPageSize)
	}
	return n, nil
}
