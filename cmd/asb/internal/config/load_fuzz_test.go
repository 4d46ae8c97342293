package config

import (
	"net/url"
	"strings"
	"testing"
)

// urlVars are the variables that take a URL: their problems show the
// URL with its password redacted.
var urlVars = map[string]bool{"ASB_PUBLIC_URL": true, "ANTHROPIC_BASE_URL": true, "GITHUB_API_URL": true,
	"GITHUB_WEB_URL": true, "BILLING_URL": true}

// FuzzLoad sets one documented variable to an arbitrary value and loads.
// Properties: Load never panics; every problem it reports is one line
// that names a documented variable; a secret's value is never echoed, nor
// the password of a URL given to a URL variable. The seed corpus in
// testdata/fuzz/FuzzLoad holds .env.example-style values and hostile ones.
func FuzzLoad(f *testing.F) {
	for i, v := range vars {
		if v.Default != "" {
			f.Add(uint8(i), v.Default)
		}
	}
	for _, s := range []string{
		"https://admin:hunter2secret@asb.example.com", "http://[::1]:99999", "1e9", "-5", "0.5G", "1h30m", "1.5s",
		":8787", "yes", "owner/repo,-evil", "/dev/null", strings.Repeat("x", 5000), "a\x00b", "ssh://u:p4ssw0rd@h:22",
	} {
		f.Add(uint8(0), s)
		f.Add(uint8(len(vars)-1), s)
	}
	for i, v := range vars {
		if urlVars[v.Name] {
			f.Add(uint8(i), "https://admin:hunter2secret@asb.example.com/x?y#z")
			f.Add(uint8(i), "ftp://admin:hunter2secret@asb.example.com")
		}
	}
	names := map[string]bool{}
	for _, v := range vars {
		names[v.Name] = true
	}
	f.Fuzz(func(t *testing.T, which uint8, value string) {
		if strings.ContainsAny(value, "\n\r") {
			return // an environment entry is one line
		}
		v := vars[int(which)%len(vars)]
		_, err := Load([]string{v.Name + "=" + value}, "")
		if err == nil {
			return
		}
		text := err.Error()
		for _, line := range strings.Split(text, "\n") {
			name, _, _ := strings.Cut(line, " ")
			name, _, _ = strings.Cut(name, "=")
			if !names[name] {
				t.Fatalf("a problem that names no variable: %q", line)
			}
		}
		if trimmed := strings.TrimSpace(value); v.Secret && len(trimmed) >= 8 && strings.Contains(text, trimmed) {
			t.Fatalf("%s's secret value is echoed: %q", v.Name, text)
		}
		if u, err := url.Parse(strings.TrimSpace(value)); err == nil && u.User != nil && urlVars[v.Name] {
			if pw, ok := u.User.Password(); ok && len(pw) >= 6 && strings.Count(value, pw) == 1 && strings.Contains(text, pw) {
				t.Fatalf("%s: the URL's password is echoed: %q", v.Name, text)
			}
		}
	})
}
