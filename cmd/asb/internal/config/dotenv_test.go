package config

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseDotenvValues(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]string
	}{
		{"plain", "A=1", map[string]string{"A": "1"}},
		{"export prefix", "export A=1\nexport\tB=2", map[string]string{"A": "1", "B": "2"}},
		{"exported name is a key", "export=1\nexporter=2", map[string]string{"export": "1", "exporter": "2"}},
		{"blank and comment lines", "\n# c\n   # indented\n\t\nA=1\n", map[string]string{"A": "1"}},
		{"empty value", "A=\nB=  ", map[string]string{"A": "", "B": ""}},
		{"spaces around =", "A = 1 ", map[string]string{"A": "1"}},
		{"leading spaces", "   A=1", map[string]string{"A": "1"}},
		{"unquoted inner spaces kept", "A=a b  c", map[string]string{"A": "a b  c"}},
		{"comment after space", "A=1 # note\nB=2\t#note", map[string]string{"A": "1", "B": "2"}},
		{"hash without space is data", "A=https://x/#frag\nB=pa#ss", map[string]string{"A": "https://x/#frag", "B": "pa#ss"}},
		{"hash at start of value", "A=#notcomment", map[string]string{"A": "#notcomment"}},
		{"comment as whole value", "A= # note", map[string]string{"A": ""}},
		{"equals in value", "A=b=c==", map[string]string{"A": "b=c=="}},
		{"single quotes literal", `A='x # y \n "z" $H'`, map[string]string{"A": `x # y \n "z" $H`}},
		{"single quotes then comment", `A='x' # c`, map[string]string{"A": "x"}},
		{"double quotes escapes", `A="l1\nl2 \"q\" back\\slash tab\t"`, map[string]string{"A": "l1\nl2 \"q\" back\\slash tab\t"}},
		{"double quotes unknown escape kept", `A="C:\path\dir"`, map[string]string{"A": `C:\path\dir`}},
		{"double quotes keep hash and spaces", `A="  a # b  " # c`, map[string]string{"A": "  a # b  "}},
		{"empty quotes", `A=""` + "\nB=''", map[string]string{"A": "", "B": ""}},
		{"no expansion", "A=$HOME/${X}", map[string]string{"A": "$HOME/${X}"}},
		{"quote inside unquoted", `A=it's "fine"`, map[string]string{"A": `it's "fine"`}},
		{"CRLF", "A=1\r\nB=\"2\"\r\n# c\r\nC='3'\r\n", map[string]string{"A": "1", "B": "2", "C": "3"}},
		{"BOM", "\xef\xbb\xbfA=1", map[string]string{"A": "1"}},
		{"later wins", "A=1\nA=2", map[string]string{"A": "2"}},
		{"lower-case names", "a_b=1", map[string]string{"a_b": "1"}},
		{"no final newline", "A=1\nB=2", map[string]string{"A": "1", "B": "2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := parseDotenv(".env", []byte(tc.in))
			if len(errs) != 0 {
				t.Fatalf("errors: %v", errs)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseDotenvMalformed(t *testing.T) {
	const secret = "ghp_SECRETVALUE123"
	tests := []struct {
		name, in string
		line     int
		reason   string
	}{
		{"no equals", "A=1\n" + secret, 2, "want KEY=VALUE"},
		{"bad name", "1A=" + secret, 1, "letters, digits and _"},
		{"base64 pasted", "c2Vj/cmV0+" + secret + "==", 1, "letters, digits and _"},
		{"name with dash", "A-B=" + secret, 1, "letters, digits and _"},
		{"empty name", "=" + secret, 1, "letters, digits and _"},
		{"unterminated double", "\n\nA=\"" + secret, 3, "unterminated double quote"},
		{"unterminated single", "A='" + secret, 1, "unterminated single quote"},
		{"multi-line value", "A=\"" + secret + "\nmore\"", 1, "cannot span lines"},
		{"junk after quote", `A="x"` + secret, 1, "after the closing quote"},
		{"CRLF line number", "A=1\r\nB=2\r\n" + secret + "\r\n", 3, "want KEY=VALUE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := parseDotenv("/etc/asb/.env", []byte(tc.in))
			if len(errs) == 0 {
				t.Fatal("no error")
			}
			var le *LineError
			if !errors.As(errs[0], &le) || le.Line != tc.line || le.File != "/etc/asb/.env" {
				t.Fatalf("got %#v, want line %d", errs[0], tc.line)
			}
			msg := errs[0].Error()
			if !strings.HasPrefix(msg, "/etc/asb/.env:") || !strings.Contains(msg, tc.reason) {
				t.Errorf("message %q lacks file:line or %q", msg, tc.reason)
			}
			if strings.Contains(msg, secret) || strings.Contains(msg, "c2VjcmV0") {
				t.Errorf("message echoes the line: %q", msg)
			}
		})
	}
}

// All bad lines are reported, and the good ones around them still count.
func TestParseDotenvKeepsGoing(t *testing.T) {
	got, errs := parseDotenv("f", []byte("A=1\nbad\nB=2\nworse\n"))
	if len(errs) != 2 || got["A"] != "1" || got["B"] != "2" {
		t.Errorf("got %v, errs %v", got, errs)
	}
}

func TestReadDotenvFile(t *testing.T) {
	dir := t.TempDir()
	if _, errs := readDotenv(filepath.Join(dir, "missing.env")); errs != nil {
		t.Errorf("missing file: %v", errs)
	}
	if _, errs := readDotenv(dir); len(errs) != 1 {
		t.Errorf("a directory should fail to read, got %v", errs)
	}
	big := filepath.Join(dir, "big.env")
	if err := os.WriteFile(big, []byte(strings.Repeat("#\n", maxDotenvSize)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errs := readDotenv(big); len(errs) != 1 || !strings.Contains(errs[0].Error(), "larger than") {
		t.Errorf("oversized file: %v", errs)
	}
}

func FuzzParseDotenv(f *testing.F) {
	for _, s := range []string{"A=1", `A="x\n"`, "export A='b' # c", "A= #", "\xef\xbb\xbfA=1\r\n", `A="\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		vals, errs := parseDotenv("f", []byte(in))
		for k := range vals {
			if !validEnvName(k) {
				t.Fatalf("invalid key %q accepted", k)
			}
		}
		for _, err := range errs {
			var le *LineError
			if !errors.As(err, &le) || le.Line < 1 {
				t.Fatalf("bad error %v", err)
			}
		}
	})
}
