package httpapi

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

var strs = []string{"", "plain", "päth/ünïcode/日本語", "quote\" back\\slash", "ctl\x00\x01\x1f\n\r\t\b\f", "<script>&amp;", "\u2028\u2029", "emoji 🙂", "\ufffd replacement"}

// fill sets every field of m (recursively) to a non-default value derived
// from seed, so that a field missing from the fast encoder shows.
func fill(m protoreflect.Message, seed int) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		s := seed + i
		switch {
		case f.IsList() && f.Kind() == protoreflect.MessageKind:
			l := m.Mutable(f).List()
			for j := 0; j < 3; j++ {
				e := l.NewElement()
				fill(e.Message(), s+j)
				l.Append(e)
			}
		case f.IsList():
			panic("unexpected scalar list " + string(f.FullName()))
		case f.Kind() == protoreflect.MessageKind && f.Message().FullName() == "google.protobuf.Timestamp":
			m.Set(f, protoreflect.ValueOfMessage(timestamppb.New(time.Unix(1700000000+int64(s), int64(s%4)*123456789)).ProtoReflect()))
		case f.Kind() == protoreflect.MessageKind:
			fill(m.Mutable(f).Message(), s)
		case f.Kind() == protoreflect.StringKind:
			m.Set(f, protoreflect.ValueOfString(strs[s%len(strs)]))
		case f.Kind() == protoreflect.BoolKind:
			m.Set(f, protoreflect.ValueOfBool(true))
		case f.Kind() == protoreflect.Int64Kind:
			m.Set(f, protoreflect.ValueOfInt64(int64(s)*1234567890123))
		case f.Kind() == protoreflect.EnumKind:
			vals := f.Enum().Values()
			m.Set(f, protoreflect.ValueOfEnum(vals.Get(s%vals.Len()).Number()))
		default:
			panic("unhandled kind " + f.Kind().String() + " in " + string(f.FullName()))
		}
	}
}

func TestFastJSONMatchesProtojson(t *testing.T) {
	ref := &runtime.JSONPb{MarshalOptions: protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}}
	fast := fastJSON{ref}
	var cases []proto.Message
	for seed := 0; seed < len(strs)*2; seed++ {
		for _, m := range []proto.Message{&workspacev1.GetFileResponse{}, &workspacev1.ListEntriesResponse{}, &workspacev1.Entry{},
			&workspacev1.ListProjectsResponse{}, &workspacev1.Project{}} {
			fill(m.ProtoReflect(), seed)
			cases = append(cases, m)
		}
	}
	// Empty and partially empty messages, unknown enum numbers, nil timestamps.
	cases = append(cases, &workspacev1.GetFileResponse{}, &workspacev1.ListEntriesResponse{}, &workspacev1.Entry{},
		&workspacev1.ListProjectsResponse{}, &workspacev1.Project{},
		&workspacev1.Entry{Type: 42, NonEditableReason: 99, Size: -5},
		&workspacev1.Entry{ModifiedAt: &timestamppb.Timestamp{Seconds: 0, Nanos: 5000000}},
		&workspacev1.Entry{ModifiedAt: &timestamppb.Timestamp{Seconds: -62135596800, Nanos: 120000}},
		&workspacev1.Entry{ModifiedAt: &timestamppb.Timestamp{Seconds: 253402300799, Nanos: 7}},
		&workspacev1.Project{ModifiedAt: &timestamppb.Timestamp{Seconds: 1700000000, Nanos: 100000000}},
		&workspacev1.ListEntriesResponse{Entries: []*workspacev1.Entry{{}, {Name: "x"}}},
		&workspacev1.GetFileResponse{Content: strings.Repeat("line\n", 1000)})
	for i, m := range cases {
		want, werr := ref.Marshal(m)
		got, gerr := fast.Marshal(m)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("case %d %T: errors differ: %v vs %v", i, m, werr, gerr)
		}
		if _, ok := encodeFast(m); !ok && werr == nil {
			t.Errorf("case %d %T: fast path not taken", i, m)
		}
		var w, g any
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("case %d %T: fast output is not JSON: %v\n%s", i, m, err, got)
		}
		if !reflect.DeepEqual(w, g) {
			t.Errorf("case %d %T differs:\nprotojson %s\nfast      %s", i, m, want, got)
		}
	}
	// Invalid UTF-8 and out-of-range timestamps fall back to protojson's error.
	for _, m := range []proto.Message{
		&workspacev1.GetFileResponse{Content: "bad \xff utf8"},
		&workspacev1.Entry{ModifiedAt: &timestamppb.Timestamp{Seconds: 1 << 60}},
	} {
		if _, err := fast.Marshal(m); err == nil {
			t.Errorf("%v: no error", m)
		}
	}
}

// TestAppendDateTime compares the hand-written date formatting with the
// time package over protojson's whole range: both ends, leap days and
// century rules, the epoch, negative seconds, and a spread of values.
func TestAppendDateTime(t *testing.T) {
	const lo, hi = -62135596800, 253402300799 // 0001-01-01T00:00:00Z, 9999-12-31T23:59:59Z
	secs := []int64{lo, lo + 1, lo + 86399, lo + 86400, hi, hi - 1, hi - 86400, -1, 0, 1, 86399, 86400, -86400, -86401}
	for _, d := range []string{"0004-02-29", "0100-02-28", "0100-03-01", "0400-02-29", "1600-02-29", "1700-03-01",
		"1900-02-28", "1900-03-01", "1969-12-31", "2000-02-29", "2000-03-01", "2024-02-29", "2100-03-01", "9996-02-29"} {
		tm, err := time.Parse(time.DateOnly, d)
		if err != nil {
			t.Fatal(err)
		}
		secs = append(secs, tm.Unix()-1, tm.Unix(), tm.Unix()+86399)
	}
	for s := int64(lo); s <= hi; s += 7777777 + s%9973 {
		secs = append(secs, s)
	}
	for _, s := range secs {
		want := time.Unix(s, 0).UTC().Format("2006-01-02T15:04:05")
		if got := string(appendDateTime(nil, s)); got != want {
			t.Fatalf("appendDateTime(%d) = %s, want %s", s, got, want)
		}
	}
}

// TestPlain8 checks the 8-bytes-at-once test against the byte table: every
// byte value at every position among plain bytes, and random words.
func TestPlain8(t *testing.T) {
	needs := func(c byte) bool { return c >= utf8.RuneSelf || asciiEscape[c] }
	check := func(w [8]byte) {
		want := true
		for _, c := range w {
			if needs(c) {
				want = false
			}
		}
		if got := plain8(load8(string(w[:]), 0)); got != want {
			t.Fatalf("plain8(%q) = %v, want %v", w[:], got, want)
		}
	}
	for pos := 0; pos < 8; pos++ {
		for c := 0; c < 256; c++ {
			for _, fill := range []byte{'a', ' ', '!', '#', '[', ']', '~', 0x7f} {
				var w [8]byte
				for i := range w {
					w[i] = fill
				}
				w[pos] = byte(c)
				check(w)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		var w [8]byte
		for i := range w {
			w[i] = byte(rng.IntN(256))
			if rng.IntN(4) != 0 {
				w[i] = byte(0x20 + rng.IntN(0x60)) // mostly printable
			}
		}
		check(w)
	}
}

func BenchmarkMarshalListEntries(b *testing.B) {
	ref := &runtime.JSONPb{MarshalOptions: protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}}
	resp := &workspacev1.ListEntriesResponse{}
	for i := 0; i < 100; i++ {
		resp.Entries = append(resp.Entries, &workspacev1.Entry{Name: "file.txt", Path: "dir/file.txt", Size: 1234,
			ModifiedAt: timestamppb.Now(), Revision: "abcdef0123456789", Editable: true})
	}
	file := &workspacev1.GetFileResponse{Entry: resp.Entries[0], Content: strings.Repeat("hello world\n", 1<<20/12)}
	line := "the quick brown fox jumps over the lazy dog 0123456789 abcdefghi\n" // gatewaybench's small.txt
	text := &workspacev1.GetFileResponse{Entry: resp.Entries[0], Content: strings.Repeat(line, 16<<10/len(line))}
	for name, m := range map[string]runtime.Marshaler{"protojson": ref, "fast": fastJSON{ref}} {
		b.Run(name+"/list100", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				_, _ = m.Marshal(resp)
			}
		})
		b.Run(name+"/text16KiB", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				_, _ = m.Marshal(text)
			}
		})
		b.Run(name+"/file1MiB", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				_, _ = m.Marshal(file)
			}
		})
	}
}
