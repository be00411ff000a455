package redact

import "testing"

// A password in a broker URL is replaced; a URL without one is kept, and
// one that does not parse is not shown if it may hold one.
func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"tcp://posed:s3cret@broker:1883": "tcp://posed:xxxxx@broker:1883",
		"tcp://broker:1883":              "tcp://broker:1883",
		"embedded":                       "embedded",
		"tcp://a:b@c:d@%zz":              "(unparsable URL with user information)",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}
