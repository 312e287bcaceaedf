package redact

import (
	"net/url"
	"strings"
)

// secretParams are query parameter names, lower case, that carry
// credentials; a name containing one of secretWords does too.
var (
	secretParams = map[string]bool{"key": true, "sig": true, "signature": true, "auth": true, "code": true}
	secretWords  = []string{"key", "token", "secret", "password", "passwd", "credential", "auth"}
)

// URL returns raw without its userinfo (user:key@) and without the query
// parameters that carry credentials (api-key, key, token, access_token,
// ..., whatever their case); the rest is shown as it was. A URL that does
// not parse is replaced whole.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return Marker
	}
	u.User = nil
	if u.RawQuery != "" {
		var kept []string
		for _, p := range strings.Split(u.RawQuery, "&") {
			name, _, _ := strings.Cut(p, "=")
			if n, err := url.QueryUnescape(name); err == nil {
				name = n
			}
			if !SecretName(name) {
				kept = append(kept, p)
			}
		}
		u.RawQuery = strings.Join(kept, "&")
		u.ForceQuery = false
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// SecretName reports whether a parameter or variable name looks like it
// holds a credential: KEY, *_API_KEY, access_token, client_secret,
// DB_PASSWORD, ... in any case.
func SecretName(name string) bool {
	n := strings.ToLower(name)
	if secretParams[n] {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
