package config

import (
	"strings"
	"testing"
)

func TestLimitsUploadsPerAgent(t *testing.T) {
	cases := map[string]string{ // limits block → error ("" valid)
		"":                                     "",
		"limits: {}\n":                         "",
		"limits: { uploadsPerAgent: 1 }\n":     "",
		"limits: { uploadsPerAgent: 4096 }\n":  "",
		"limits: { uploadsPerAgent: 0 }\n":     "limits.uploadsPerAgent: must be between 1 and 4096 (got 0)",
		"limits: { uploadsPerAgent: -3 }\n":    "limits.uploadsPerAgent: must be between 1 and 4096 (got -3)",
		"limits: { uploadsPerAgent: 40960 }\n": "limits.uploadsPerAgent: must be between 1 and 4096 (got 40960)",
	}
	for in, want := range cases {
		c, err := Parse(strings.NewReader(good + in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		err = c.Validate()
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", in, err)
		case want != "" && (err == nil || err.Error() != want):
			t.Errorf("%q: error %v, want exactly %q", in, err, want)
		}
	}
	c, _ := Parse(strings.NewReader(good))
	if c.Limits.Uploads() != DefaultUploadsPerAgent || DefaultUploadsPerAgent != 16 {
		t.Errorf("default uploadsPerAgent = %d", c.Limits.Uploads())
	}
	if _, err := Parse(strings.NewReader(good + "limits: { uploads: 3 }\n")); err == nil {
		t.Error("an unknown limits key parsed")
	}
}
