package alloc

import (
	"errors"
	"strings"
	"testing"
)

func TestParseConfigGood(t *testing.T) {
	all := func(n int) (d [RoundupIntervals]int) {
		for i := range d {
			d[i] = n
		}
		return d
	}
	for _, tc := range []struct {
		in   string
		want Config
		str  string
	}{
		{"", Config{}, ""},
		{"  ", Config{}, ""},
		{"max_split_size_mb:128", Config{MaxSplitSize: 128 << 20}, "max_split_size_mb:128"},
		{"max_split_size_mb:20", Config{MaxSplitSize: 20 << 20}, "max_split_size_mb:20"},
		{"garbage_collection_threshold:0.6", Config{GarbageCollectionThreshold: 0.6}, "garbage_collection_threshold:0.6"},
		{"roundup_power2_divisions:4", Config{RoundupPower2Divisions: all(4)}, "roundup_power2_divisions:4"},
		{"roundup_power2_divisions:1", Config{RoundupPower2Divisions: all(1)}, "roundup_power2_divisions:1"},
		{"expandable_segments:False", Config{}, ""},
		{"expandable_segments:True", Config{ExpandableSegments: true}, "expandable_segments:True"},
		{"expandable_segments:True,expandable_segments:False", Config{}, ""},
		{"expandable_segments:True,max_split_size_mb:128", Config{ExpandableSegments: true, MaxSplitSize: 128 << 20}, "max_split_size_mb:128,expandable_segments:True"},
		{"max_split_size_mb : 64 , garbage_collection_threshold : 0.5,", Config{MaxSplitSize: 64 << 20, GarbageCollectionThreshold: 0.5},
			"max_split_size_mb:64,garbage_collection_threshold:0.5"},
		{"max_split_size_mb:64,max_split_size_mb:32", Config{MaxSplitSize: 32 << 20}, "max_split_size_mb:32"},
		{"roundup_power2_divisions:[256:1,512:2,>:8]", Config{RoundupPower2Divisions: [16]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 8, 8, 8, 8, 8, 8, 8}},
			"roundup_power2_divisions:[256:1,512:8,>:8]"},
		{"roundup_power2_divisions:[1:2,4:16]", Config{RoundupPower2Divisions: [16]int{2, 0, 16}},
			"roundup_power2_divisions:[1:2,2:0,4:16,8:0,>:0]"},
		{"roundup_power2_divisions:[65536:4]", Config{RoundupPower2Divisions: all(4)}, "roundup_power2_divisions:4"},
		{"roundup_power2_divisions:[]", Config{}, ""},
	} {
		got, err := ParseConfig(tc.in)
		if err != nil {
			t.Errorf("ParseConfig(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseConfig(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if s := got.String(); s != tc.str {
			t.Errorf("String() of %q = %q, want %q", tc.in, s, tc.str)
		}
		back, err := ParseConfig(got.String())
		if err != nil || back != got {
			t.Errorf("round trip of %q: %+v, %v", tc.in, back, err)
		}
	}
}

func TestParseConfigBad(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string // substrings of the error
	}{
		{"max_split_size_mb:19", []string{"max_split_size_mb:19", ">= 20"}},
		{"max_split_size_mb:-5", []string{"max_split_size_mb:-5", ">= 20"}},
		{"max_split_size_mb:abc", []string{"max_split_size_mb:abc", "integer"}},
		{"max_split_size_mb", []string{"max_split_size_mb", "':'"}},
		{"max_split_size_mb:", []string{"missing value"}},
		{"garbage_collection_threshold:1", []string{"garbage_collection_threshold:1", "(0.0, 1.0)"}},
		{"garbage_collection_threshold:0", []string{"(0.0, 1.0)"}},
		{"garbage_collection_threshold:NaN", []string{"(0.0, 1.0)"}},
		{"garbage_collection_threshold:x", []string{"(0.0, 1.0)"}},
		{"roundup_power2_divisions:3", []string{"roundup_power2_divisions:3", "power of two"}},
		{"roundup_power2_divisions:0", []string{"power of two"}},
		{"roundup_power2_divisions:[256:3]", []string{"roundup_power2_divisions:3", "power of two"}},
		{"roundup_power2_divisions:[300:2]", []string{"300", "power of two in MiB"}},
		{"roundup_power2_divisions:[256:2", []string{"']'"}},
		{"roundup_power2_divisions:[256]", []string{"MB:divisions"}},
		{"roundup_power2_divisions:[256:2;512:4]", []string{"roundup_power2_divisions"}},
		{"expandable_segments:true", []string{"expandable_segments:true", "True or False"}},
		{"expandable_segments:1", []string{"expandable_segments:1", "True or False"}},
		{"expandable_segments:yes", []string{"expandable_segments:yes", "True or False"}},
		{"backend:native", []string{`"backend"`, "unknown key", "max_split_size_mb"}},
		{"max_split_size_mb:64 garbage_collection_threshold:0.5", []string{"max_split_size_mb"}},
		{",max_split_size_mb:64", []string{"expected a key"}},
		{"max_split_size_mb:64;x", []string{"max_split_size_mb:64;x"}},
	} {
		_, err := ParseConfig(tc.in)
		if err == nil {
			t.Errorf("ParseConfig(%q) accepted", tc.in)
			continue
		}
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), "alloc: ") {
			t.Errorf("ParseConfig(%q): error %T %v", tc.in, err, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseConfig(%q) = %q, want it to mention %q", tc.in, err, w)
			}
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv(EnvVar, "")
	if c, err := ConfigFromEnv(); err != nil || c != (Config{}) {
		t.Errorf("empty env: %+v %v", c, err)
	}
	t.Setenv(EnvVar, "max_split_size_mb:256,roundup_power2_divisions:2")
	c, err := ConfigFromEnv()
	if err != nil || c.MaxSplitSize != 256<<20 || c.Divisions(5<<30) != 2 {
		t.Errorf("env: %+v %v", c, err)
	}
	t.Setenv(EnvVar, "expandable_segments:Yes")
	if _, err := ConfigFromEnv(); err == nil || !strings.Contains(err.Error(), EnvVar) {
		t.Errorf("bad env: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{MaxSplitSize: 1 << 20},
		{MaxSplitSize: -1},
		{GarbageCollectionThreshold: 1},
		{GarbageCollectionThreshold: -0.5},
		{RoundupPower2Divisions: [16]int{3}},
	} {
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "alloc: ") {
			t.Errorf("Validate(%+v) = %v", c, err)
		}
	}
	if err := (Config{MaxSplitSize: 20 << 20, GarbageCollectionThreshold: 0.1}).Validate(); err != nil {
		t.Error(err)
	}
}
