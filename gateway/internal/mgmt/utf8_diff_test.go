package mgmt

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"

	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
)

// findStringMain is findString as it was before it stopped allocating (a
// closure per field, the dotted prefix built for every field): the
// reference the walker is compared with, for the field it names, its leaf
// and which one it finds first.
func findStringMain(m protoreflect.Message, prefix string, bad func(string) bool) (name string, leaf protoreflect.Name, found bool) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len() && !found; i++ {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		full := prefix + string(fd.Name())
		v := m.Get(fd)
		// visit checks one value of kind: a string, or a message's fields;
		// false once a bad string is found.
		visit := func(v protoreflect.Value, kind protoreflect.Kind) bool {
			switch {
			case kind == protoreflect.StringKind && bad(v.String()):
				name, leaf, found = full, fd.Name(), true
			case kind == protoreflect.MessageKind:
				name, leaf, found = findStringMain(v.Message(), full+".", bad)
			}
			return !found
		}
		switch {
		case fd.IsList():
			l := v.List()
			for j := 0; j < l.Len() && !found; j++ {
				visit(l.Get(j), fd.Kind())
			}
		case fd.IsMap():
			// A key, then its value (a key is never a message).
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				return visit(k.Value(), fd.MapKey().Kind()) && visit(mv, fd.MapValue().Kind())
			})
		default:
			visit(v, fd.Kind())
		}
	}
	return name, leaf, found
}

// A proto2 file with maps (string and int keys, string and message values),
// a oneof, bytes, a group and recursion, none of which the contract has yet.
func diffTestDescriptor(t *testing.T) protoreflect.MessageDescriptor {
	s := proto.String
	i := proto.Int32
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	str := descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()
	byt := descriptorpb.FieldDescriptorProto_TYPE_BYTES.Enum()
	msg := descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
	grp := descriptorpb.FieldDescriptorProto_TYPE_GROUP.Enum()
	i32 := descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum()
	entry := func(name string, kt *descriptorpb.FieldDescriptorProto_Type, vt *descriptorpb.FieldDescriptorProto_Type, vtn string) *descriptorpb.DescriptorProto {
		v := &descriptorpb.FieldDescriptorProto{Name: s("value"), Number: i(2), Label: opt, Type: vt}
		if vtn != "" {
			v.TypeName = s(vtn)
		}
		return &descriptorpb.DescriptorProto{
			Name:    s(name),
			Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
			Field:   []*descriptorpb.FieldDescriptorProto{{Name: s("key"), Number: i(1), Label: opt, Type: kt}, v},
		}
	}
	fdp := &descriptorpb.FileDescriptorProto{
		Name:    s("difftest.proto"),
		Package: s("difftest"),
		Syntax:  s("proto2"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: s("M"),
			Field: []*descriptorpb.FieldDescriptorProto{
				{Name: s("path"), Number: i(1), Label: opt, Type: str},
				{Name: s("blob"), Number: i(2), Label: opt, Type: byt},
				{Name: s("names"), Number: i(3), Label: rep, Type: str},
				{Name: s("blobs"), Number: i(4), Label: rep, Type: byt},
				{Name: s("sm"), Number: i(5), Label: rep, Type: msg, TypeName: s(".difftest.M.SmEntry")},
				{Name: s("mm"), Number: i(6), Label: rep, Type: msg, TypeName: s(".difftest.M.MmEntry")},
				{Name: s("im"), Number: i(7), Label: rep, Type: msg, TypeName: s(".difftest.M.ImEntry")},
				{Name: s("bm"), Number: i(8), Label: rep, Type: msg, TypeName: s(".difftest.M.BmEntry")},
				{Name: s("child"), Number: i(9), Label: opt, Type: msg, TypeName: s(".difftest.M")},
				{Name: s("children"), Number: i(10), Label: rep, Type: msg, TypeName: s(".difftest.M")},
				{Name: s("o_name"), Number: i(11), Label: opt, Type: str, OneofIndex: i(0)},
				{Name: s("o_child"), Number: i(12), Label: opt, Type: msg, TypeName: s(".difftest.M"), OneofIndex: i(0)},
				{Name: s("o_blob"), Number: i(13), Label: opt, Type: byt, OneofIndex: i(0)},
				{Name: s("g"), Number: i(14), Label: opt, Type: grp, TypeName: s(".difftest.M.G")},
				{Name: s("cursor"), Number: i(15), Label: opt, Type: str},
			},
			NestedType: []*descriptorpb.DescriptorProto{
				entry("SmEntry", str, str, ""),
				entry("MmEntry", str, msg, ".difftest.M"),
				entry("ImEntry", i32, str, ""),
				entry("BmEntry", str, byt, ""),
				{Name: s("G"), Field: []*descriptorpb.FieldDescriptorProto{{Name: s("gs"), Number: i(1), Label: opt, Type: str}}},
			},
			OneofDecl: []*descriptorpb.OneofDescriptorProto{{Name: s("o")}},
		}},
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fd.Messages().Get(0)
}

const badStr = "a\xffb"

type filler struct {
	r       *rand.Rand
	badProb float64
}

func (f *filler) str(allowBad bool) (string, bool) {
	if allowBad && f.r.Float64() < f.badProb {
		// U+FFFD is what the REST codec's predicate calls bad.
		return []string{badStr, "\xff", "\xc3", "x\xed\xa0\x80", "\uFFFD"}[f.r.IntN(5)], true
	}
	return []string{"", "ok", "ünï", "日本/x"}[f.r.IntN(4)], false
}

func (f *filler) scalar(fd protoreflect.FieldDescriptor, k protoreflect.Kind, allowBad bool, depth int, mk func() protoreflect.Message) (protoreflect.Value, bool) {
	switch k {
	case protoreflect.StringKind:
		s, b := f.str(allowBad)
		return protoreflect.ValueOfString(s), b
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{0xff, 0xfe, byte(f.r.IntN(256))}), false
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(f.r.IntN(2) == 0), false
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vals.Get(f.r.IntN(vals.Len())).Number()), false
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(f.r.IntN(100))), false
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(f.r.IntN(100))), false
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(f.r.IntN(100))), false
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(f.r.IntN(100))), false
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(1.5), false
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(2.5), false
	case protoreflect.MessageKind, protoreflect.GroupKind:
		m := mk()
		b := f.fill(m, depth+1, allowBad)
		return protoreflect.ValueOfMessage(m), b
	}
	panic(k)
}

// fill sets random fields of m; a map gets at most one bad entry (its
// iteration order is random, so two bad entries have no "first").
func (f *filler) fill(m protoreflect.Message, depth int, allowBad bool) (anyBad bool) {
	if depth > 4 {
		return false
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if f.r.IntN(3) == 0 {
			continue
		}
		if fd.Kind() == protoreflect.MessageKind && !fd.IsMap() && depth >= 3 {
			continue
		}
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for n := f.r.IntN(4); n > 0; n-- {
				v, b := f.scalar(fd, fd.Kind(), allowBad, depth, func() protoreflect.Message { return l.NewElement().Message() })
				l.Append(v)
				anyBad = anyBad || b
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			mapBad := false
			for n := f.r.IntN(4); n > 0; n-- {
				kv, kb := f.scalar(fd.MapKey(), fd.MapKey().Kind(), allowBad && !mapBad, depth, nil)
				vv, vb := f.scalar(fd.MapValue(), fd.MapValue().Kind(), allowBad && !mapBad, depth, func() protoreflect.Message { return mp.NewValue().Message() })
				k := kv.MapKey()
				if mp.Has(k) {
					continue
				}
				mp.Set(k, vv)
				mapBad = mapBad || kb || vb
			}
			anyBad = anyBad || mapBad
		default:
			v, b := f.scalar(fd, fd.Kind(), allowBad, depth, func() protoreflect.Message { return m.NewField(fd).Message() })
			m.Set(fd, v)
			anyBad = anyBad || b
		}
	}
	return anyBad
}

func diffTypes(t *testing.T) []protoreflect.MessageType {
	var types []protoreflect.MessageType
	for _, fd := range []protoreflect.FileDescriptor{
		workspacev1.File_workspace_v1_workspace_proto,
		workspacev1.File_workspace_v1_checkpoints_proto,
		workspacev1.File_workspace_v1_management_proto,
		workspacev1.File_workspace_v1_types_proto,
		workspacev1.File_workspace_v1_watch_proto,
	} {
		msgs := fd.Messages()
		for i := 0; i < msgs.Len(); i++ {
			mt, err := protoregistryType(msgs.Get(i))
			if err != nil {
				t.Fatal(err)
			}
			types = append(types, mt)
		}
	}
	types = append(types, (&structpb.Struct{}).ProtoReflect().Type(), (&structpb.ListValue{}).ProtoReflect().Type(), (&structpb.Value{}).ProtoReflect().Type())
	types = append(types, dynamicpb.NewMessageType(diffTestDescriptor(t)))
	return types
}

func protoregistryType(md protoreflect.MessageDescriptor) (protoreflect.MessageType, error) {
	return protoregistry.GlobalTypes.FindMessageByName(md.FullName())
}

func compareOne(t *testing.T, m protoreflect.Message, bad func(string) bool, what string) bool {
	n1, l1, f1 := findStringMain(m, "", bad)
	n2, l2, f2 := findString(m, bad)
	if n1 != n2 || l1 != l2 || f1 != f2 {
		t.Errorf("%s %s: main (%q %q %v), branch (%q %q %v)\n%v", what, m.Descriptor().FullName(), n1, l1, f1, n2, l2, f2, m.Interface())
		return false
	}
	return true
}

func TestFindStringDifferential(t *testing.T) {
	preds := map[string]func(string) bool{
		"invalid":   func(s string) bool { return !utf8.ValidString(s) },
		"runeerror": func(s string) bool { return strings.ContainsRune(s, utf8.RuneError) },
	}
	found, total := 0, 0
	for _, mt := range diffTypes(t) {
		for seed := uint64(0); seed < 600; seed++ {
			f := &filler{r: rand.New(rand.NewPCG(seed, uint64(len(mt.Descriptor().FullName())))), badProb: []float64{0, 0.03, 0.1, 0.3}[seed%4]}
			m := mt.New()
			f.fill(m, 0, true)
			for pn, p := range preds {
				total++
				if !compareOne(t, m, p, pn) {
					return
				}
				if _, _, ok := findString(m, p); ok {
					found++
				}
			}
		}
	}
	t.Logf("%d comparisons, %d with a field found", total, found)
}

// Structured: every string field reachable to depth 4 (lists of 1-2
// elements, the bad one in either), alone invalid in an otherwise valid
// message, then a valid one before it.
func TestFindStringDifferentialEachField(t *testing.T) {
	bad := func(s string) bool { return !utf8.ValidString(s) }
	n := 0
	for _, mt := range diffTypes(t) {
		var paths [][]protoreflect.FieldDescriptor
		var walk func(md protoreflect.MessageDescriptor, pre []protoreflect.FieldDescriptor)
		walk = func(md protoreflect.MessageDescriptor, pre []protoreflect.FieldDescriptor) {
			if len(pre) > 4 {
				return
			}
			fs := md.Fields()
			for i := 0; i < fs.Len(); i++ {
				fd := fs.Get(i)
				p := append(append([]protoreflect.FieldDescriptor(nil), pre...), fd)
				switch {
				case fd.IsMap():
					paths = append(paths, p) // key, and value when a string
					if fd.MapValue().Kind() == protoreflect.MessageKind {
						walk(fd.MapValue().Message(), p)
					}
				case fd.Kind() == protoreflect.StringKind:
					paths = append(paths, p)
				case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
					walk(fd.Message(), p)
				}
			}
		}
		walk(mt.Descriptor(), nil)
		for _, p := range paths {
			for variant := 0; variant < 4; variant++ {
				m := mt.New()
				inString := set(m, p, variant)
				n++
				if !compareOne(t, m, bad, fmt.Sprint("each field variant ", variant)) {
					return
				}
				// One bad string is found (not in a group, as on main), a bad
				// bytes value never.
				if _, _, ok := findString(m, bad); ok != (inString && !inGroup(p)) {
					t.Errorf("%s %v variant %d: found %v\n%v", mt.Descriptor().FullName(), names(p), variant, ok, m.Interface())
				}
			}
		}
	}
	t.Logf("%d structured messages", n)
}

func inGroup(p []protoreflect.FieldDescriptor) bool {
	for _, fd := range p {
		if fd.Kind() == protoreflect.GroupKind {
			return true
		}
	}
	return false
}

func names(p []protoreflect.FieldDescriptor) string {
	var s []string
	for _, fd := range p {
		s = append(s, string(fd.Name()))
	}
	return strings.Join(s, ".")
}

// set makes the path p lead to a bad string: variant bit 0 puts a valid
// element/entry before it, bit 1 a valid sibling string field set too (and
// a map's bad value, not its key). It reports whether the bad bytes are in
// a string (not a bytes value).
func set(m protoreflect.Message, p []protoreflect.FieldDescriptor, variant int) bool {
	fd := p[0]
	last := len(p) == 1
	if variant&2 != 0 {
		fs := m.Descriptor().Fields()
		for i := 0; i < fs.Len(); i++ {
			if o := fs.Get(i); o != fd && o.Kind() == protoreflect.StringKind && !o.IsList() && !o.IsMap() && o.ContainingOneof() == nil {
				m.Set(o, protoreflect.ValueOfString("valid"))
			}
		}
	}
	switch {
	case fd.IsMap():
		mp := m.Mutable(fd).Map()
		key := func(s string) protoreflect.MapKey {
			if fd.MapKey().Kind() == protoreflect.StringKind {
				return protoreflect.ValueOfString(s).MapKey()
			}
			return protoreflect.ValueOfInt32(int32(len(s))).MapKey()
		}
		val := func(s string) protoreflect.Value {
			switch fd.MapValue().Kind() {
			case protoreflect.StringKind:
				return protoreflect.ValueOfString(s)
			case protoreflect.BytesKind:
				return protoreflect.ValueOfBytes([]byte(s))
			}
			return protoreflect.ValueOfMessage(mp.NewValue().Message())
		}
		if variant&1 != 0 {
			mp.Set(key("v"), val("v"))
		}
		if last {
			// bad key (when a string) with a valid value, and a bad value.
			vk := fd.MapValue().Kind()
			if fd.MapKey().Kind() == protoreflect.StringKind && (variant&2 == 0 || vk == protoreflect.MessageKind) {
				mp.Set(key(badStr), val("ok"))
				return true
			}
			mp.Set(key("bad0"), val(badStr))
			return vk == protoreflect.StringKind
		}
		v := mp.NewValue()
		r := set(v.Message(), p[1:], variant)
		mp.Set(key("k"), v)
		return r
	case fd.IsList():
		l := m.Mutable(fd).List()
		if variant&1 != 0 {
			if fd.Kind() == protoreflect.StringKind {
				l.Append(protoreflect.ValueOfString("v"))
			} else {
				l.Append(protoreflect.ValueOfMessage(l.NewElement().Message()))
			}
		}
		if last {
			l.Append(protoreflect.ValueOfString(badStr))
			return true
		}
		e := l.NewElement()
		r := set(e.Message(), p[1:], variant)
		l.Append(e)
		return r
	default:
		if last {
			m.Set(fd, protoreflect.ValueOfString(badStr))
			return true
		}
		c := m.NewField(fd)
		r := set(c.Message(), p[1:], variant)
		m.Set(fd, c)
		return r
	}
}

// Every sidecar call walks its request: a valid one costs no allocation.
func TestStringFieldErrorValidAllocatesNothing(t *testing.T) {
	bad := func(s string) bool { return !utf8.ValidString(s) }
	ws := &workspacev1.WorkspaceRef{Scope: workspacev1.WorkspaceScope_PROJECT, ProjectName: "p"}
	for _, m := range []proto.Message{
		&workspacev1.UpdateFileRequest{Workspace: ws, Path: "a/b", Content: "x", ExpectedRevision: "r"},
		&workspacev1.ListEntriesRequest{Workspace: ws, Path: "a", Cursor: "c"},
		&workspacev1.MoveEntryRequest{Workspace: ws, SourcePath: "a", DestinationPath: "b"},
	} {
		if n := testing.AllocsPerRun(100, func() { _ = StringFieldError(m, bad, "x") }); n != 0 {
			t.Errorf("%T: %v allocations", m, n)
		}
	}
}
