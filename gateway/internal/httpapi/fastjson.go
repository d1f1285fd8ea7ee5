package httpapi

import (
	"errors"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/types/known/timestamppb"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// fastJSON is the REST marshaler: runtime.JSONPb (protojson with proto
// names and unpopulated fields), except that the hot response messages
// (directory listings, file reads) are encoded by hand. protojson walks every
// message by reflection, which cost more than the sidecar call itself for a
// 100-entry listing or a 1 MiB file. The hand-written encoders produce the
// same JSON value as protojson (TestFastJSONMatchesProtojson fills every
// field of every covered message, so a field added to the .proto without
// being added here fails the test).
type fastJSON struct {
	*runtime.JSONPb
}

// Marshal encodes the covered messages by hand and everything else (and any
// value protojson would refuse) with protojson.
func (f fastJSON) Marshal(v any) ([]byte, error) {
	if b, ok := encodeFast(v); ok {
		return b, nil
	}
	return f.JSONPb.Marshal(v)
}

// encodeFast reports ok=false for types it does not cover and for values
// protojson would refuse (invalid UTF-8, out-of-range timestamps).
func encodeFast(v any) ([]byte, bool) {
	var e enc
	switch m := v.(type) {
	case *workspacev1.GetFileResponse:
		e.getFile(m)
	case *workspacev1.ListEntriesResponse:
		e.listEntries(m)
	case *workspacev1.Entry:
		e.entry(m)
	case *workspacev1.ListProjectsResponse:
		e.listProjects(m)
	case *workspacev1.Project:
		e.project(m)
	default:
		return nil, false
	}
	return e.b, e.err == nil
}

var errFastJSON = errors.New("fastjson: value protojson would refuse")

type enc struct {
	b   []byte
	err error
}

func (e *enc) key(k string, first bool) {
	if !first {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, k...)
	e.b = append(e.b, '"', ':')
}

// asciiEscape marks the ASCII bytes protojson escapes.
var asciiEscape = func() (t [utf8.RuneSelf]bool) {
	for c := 0; c < ' '; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// str appends s as protojson does: only '"', '\\' and control characters
// are escaped; invalid UTF-8 is refused. One pass, copying unescaped runs.
func (e *enc) str(s string) {
	e.b = append(e.b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Skip 8 bytes at a time while none needs attention (non-ASCII,
		// control, '"', '\\'): most file content is plain ASCII text.
		for i+8 <= len(s) && plain8(load8(s, i)) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				e.err = errFastJSON // protojson refuses invalid UTF-8
				return
			}
			i += n
			continue
		}
		if !asciiEscape[c] {
			i++
			continue
		}
		e.b = append(e.b, s[start:i]...)
		e.b = append(e.b, '\\')
		switch c {
		case '"', '\\':
			e.b = append(e.b, c)
		case '\b':
			e.b = append(e.b, 'b')
		case '\f':
			e.b = append(e.b, 'f')
		case '\n':
			e.b = append(e.b, 'n')
		case '\r':
			e.b = append(e.b, 'r')
		case '\t':
			e.b = append(e.b, 't')
		default:
			e.b = append(e.b, 'u')
			e.b = append(e.b, "0000"[1+(bits.Len32(uint32(c))-1)/4:]...)
			e.b = strconv.AppendUint(e.b, uint64(c), 16)
		}
		i++
		start = i
	}
	e.b = append(e.b, s[start:]...)
	e.b = append(e.b, '"')
}

const (
	lsb8 = 0x0101010101010101
	msb8 = 0x8080808080808080
)

// plain8 reports whether none of the 8 bytes in x is >= 0x80, < 0x20, '"'
// or '\\' (exact bit tricks: "has zero byte" and "has byte less than n"
// are exact once no byte has its high bit set).
func plain8(x uint64) bool {
	if x&msb8 != 0 {
		return false
	}
	less := (x - lsb8*' ') & ^x & msb8
	q := x ^ (lsb8 * '"')
	bs := x ^ (lsb8 * '\\')
	return less|((q-lsb8)&^q&msb8)|((bs-lsb8)&^bs&msb8) == 0
}

// load8 returns s[i:i+8] as a little-endian word (one load once compiled).
func load8(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

func (e *enc) boolean(v bool) {
	if v {
		e.b = append(e.b, "true"...)
	} else {
		e.b = append(e.b, "false"...)
	}
}

// int64s are strings in protojson.
func (e *enc) int64(v int64) {
	e.b = append(e.b, '"')
	e.b = strconv.AppendInt(e.b, v, 10)
	e.b = append(e.b, '"')
}

func (e *enc) enum(name string, known bool, n int32) {
	if known {
		e.b = append(e.b, '"')
		e.b = append(e.b, name...)
		e.b = append(e.b, '"')
		return
	}
	e.b = strconv.AppendInt(e.b, int64(n), 10)
}

// timestamp follows protojson: RFC 3339 in UTC with 0, 3, 6 or 9
// fractional digits; out-of-range values are refused.
func (e *enc) timestamp(t *timestamppb.Timestamp) {
	if t == nil {
		e.b = append(e.b, "null"...)
		return
	}
	secs, nanos := t.GetSeconds(), t.GetNanos()
	if secs < -62135596800 || secs > 253402300799 || nanos < 0 || nanos > 999999999 {
		e.err = errFastJSON
		return
	}
	e.b = append(e.b, '"')
	e.b = appendDateTime(e.b, secs)
	switch {
	case nanos == 0:
	case nanos%1000000 == 0:
		e.b = appendDigits(append(e.b, '.'), int(nanos/1000000), 3)
	case nanos%1000 == 0:
		e.b = appendDigits(append(e.b, '.'), int(nanos/1000), 6)
	default:
		e.b = appendDigits(append(e.b, '.'), int(nanos), 9)
	}
	e.b = append(e.b, 'Z', '"')
}

// appendDateTime appends secs (seconds since the Unix epoch, in protojson's
// range: years 0001..9999) as "2006-01-02T15:04:05" in UTC, as
// time.Unix(secs, 0).UTC().AppendFormat does, without the layout
// interpretation that made it most of a 100-entry listing's encoding time.
// The date is Howard Hinnant's days_from_civil inverse (civil_from_days).
func appendDateTime(b []byte, secs int64) []byte {
	days := secs / 86400
	sod := secs % 86400
	if sod < 0 {
		sod += 86400
		days--
	}
	z := days + 719468 // days since 0000-03-01: >= 306 from 0001-01-01 on
	era := z / 146097
	doe := z - era*146097                                  // [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // [0, 399]
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100) // [0, 365]
	mp := (5*doy + 2) / 153                  // [0, 11], March-based
	d := doy - (153*mp+2)/5 + 1              // [1, 31]
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	b = appendDigits(b, int(y), 4)
	b = appendDigits(append(b, '-'), int(m), 2)
	b = appendDigits(append(b, '-'), int(d), 2)
	b = appendDigits(append(b, 'T'), int(sod/3600), 2)
	b = appendDigits(append(b, ':'), int(sod/60%60), 2)
	return appendDigits(append(b, ':'), int(sod%60), 2)
}

// appendDigits appends v zero-padded to width digits.
func appendDigits(b []byte, v, width int) []byte {
	var buf [9]byte
	for i := width - 1; i >= 0; i-- {
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, buf[:width]...)
}

func (e *enc) entry(m *workspacev1.Entry) {
	if m == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, '{')
	e.key("name", true)
	e.str(m.GetName())
	e.key("path", false)
	e.str(m.GetPath())
	e.key("type", false)
	t := m.GetType()
	_, ok := workspacev1.EntryType_name[int32(t)]
	e.enum(t.String(), ok, int32(t))
	e.key("size", false)
	e.int64(m.GetSize())
	e.key("modified_at", false)
	e.timestamp(m.GetModifiedAt())
	e.key("revision", false)
	e.str(m.GetRevision())
	e.key("editable", false)
	e.boolean(m.GetEditable())
	e.key("non_editable_reason", false)
	r := m.GetNonEditableReason()
	_, ok = workspacev1.NonEditableReason_name[int32(r)]
	e.enum(r.String(), ok, int32(r))
	e.b = append(e.b, '}')
}

func (e *enc) getFile(m *workspacev1.GetFileResponse) {
	e.b = make([]byte, 0, len(m.GetContent())+len(m.GetContent())/8+512)
	e.b = append(e.b, '{')
	e.key("entry", true)
	e.entry(m.GetEntry())
	e.key("content", false)
	e.str(m.GetContent())
	e.b = append(e.b, '}')
}

func (e *enc) listEntries(m *workspacev1.ListEntriesResponse) {
	e.b = make([]byte, 0, 256*len(m.GetEntries())+128)
	e.b = append(e.b, '{')
	e.key("entries", true)
	encArray(e, m.GetEntries(), e.entry)
	e.key("next_cursor", false)
	e.str(m.GetNextCursor())
	e.key("directory_revision", false)
	e.str(m.GetDirectoryRevision())
	e.b = append(e.b, '}')
}

func (e *enc) project(m *workspacev1.Project) {
	if m == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, '{')
	e.key("name", true)
	e.str(m.GetName())
	e.key("modified_at", false)
	e.timestamp(m.GetModifiedAt())
	e.key("git_initialized", false)
	e.boolean(m.GetGitInitialized())
	e.key("revision", false)
	e.str(m.GetRevision())
	e.b = append(e.b, '}')
}

// encArray writes xs as a JSON array, each element by one.
func encArray[T any](e *enc, xs []T, one func(T)) {
	e.b = append(e.b, '[')
	for i, x := range xs {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		one(x)
	}
	e.b = append(e.b, ']')
}

func (e *enc) listProjects(m *workspacev1.ListProjectsResponse) {
	e.b = make([]byte, 0, 160*len(m.GetProjects())+64)
	e.b = append(e.b, '{')
	e.key("projects", true)
	encArray(e, m.GetProjects(), e.project)
	e.key("next_cursor", false)
	e.str(m.GetNextCursor())
	e.b = append(e.b, '}')
}
