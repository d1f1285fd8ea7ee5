package requestid

import (
	"strings"
	"testing"
)

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"abc-123":                     "abc-123",
		"":                            "",
		"has space":                   "",
		"tab\there":                   "",
		"new\nline":                   "",
		"ünicode":                     "",
		strings.Repeat("a", MaxLen):   strings.Repeat("a", MaxLen),
		strings.Repeat("a", MaxLen+1): "",
		"<script>":                    "<script>",
	} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
	if a, b := New(), New(); a == b || len(a) != 32 {
		t.Errorf("New: %q %q", a, b)
	}
}
