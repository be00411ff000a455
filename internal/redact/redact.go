// Package redact keeps secrets out of what posed logs and shows: a
// broker URL's password.
package redact

import (
	"net/url"
	"strings"
)

// URL returns a broker URL fit for logs: a password in it
// (tcp://user:secret@host) is replaced by "xxxxx". Anything that does not
// parse as a URL is returned whole only if it has no '@'.
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if strings.Contains(s, "@") {
			return "(unparsable URL with user information)"
		}
		return s
	}
	return u.Redacted()
}
