package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// maxDotenvSize bounds how much of a .env file is read; a real one is a
// few KiB, so anything bigger is a mistake (a binary, a log) and reading
// it whole would only waste memory.
const maxDotenvSize = 1 << 20

// LineError reports a .env line that could not be parsed. It never carries
// the line's text: a malformed line is often a pasted secret.
type LineError struct {
	File   string
	Line   int
	Reason string
}

func (e *LineError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
}

// readDotenv reads the .env file at path. A missing file is not an error:
// most deployments configure asb through the real environment. Parsing
// goes on past a bad line so that every problem is reported at once.
func readDotenv(path string) (map[string]string, []error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []error{fmt.Errorf("read env file: %w", err)}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxDotenvSize+1))
	if err != nil {
		return nil, []error{fmt.Errorf("read env file %s: %w", path, err)}
	}
	if len(data) > maxDotenvSize {
		return nil, []error{fmt.Errorf("read env file %s: larger than %d bytes", path, maxDotenvSize)}
	}
	return parseDotenv(path, data)
}

// parseDotenv parses the .env dialect documented in docs/configuration.md:
// KEY=VALUE lines with an optional "export " prefix, # comments, blank
// lines, and single- or double-quoted values. There is no variable
// expansion: "$" is literal, so a secret containing "$" survives intact.
// Later lines override earlier ones, as when the file is sourced by a shell.
func parseDotenv(name string, data []byte) (map[string]string, []error) {
	vals := make(map[string]string)
	var errs []error
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // editors on Windows add a BOM
	for i, raw := range strings.Split(string(data), "\n") {
		key, val, ok, reason := parseDotenvLine(strings.TrimSuffix(raw, "\r"))
		if reason != "" {
			errs = append(errs, &LineError{File: name, Line: i + 1, Reason: reason})
			continue
		}
		if ok {
			vals[key] = val
		}
	}
	return vals, errs
}

// parseDotenvLine returns ok=false for blank and comment lines, and a
// non-empty reason for a malformed line. Reasons may name the key (it is
// not secret once it is a valid name) but never quote the value.
func parseDotenvLine(line string) (key, val string, ok bool, reason string) {
	s := strings.TrimLeft(line, " \t")
	if s == "" || s[0] == '#' {
		return "", "", false, ""
	}
	if rest, found := strings.CutPrefix(s, "export"); found && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
		s = strings.TrimLeft(rest, " \t")
	}
	eq := strings.IndexByte(s, '=')
	if eq < 0 {
		return "", "", false, "malformed line: want KEY=VALUE"
	}
	key = strings.TrimRight(s[:eq], " \t")
	if !validEnvName(key) {
		return "", "", false, "malformed line: the name before = must be letters, digits and _ (not starting with a digit)"
	}
	afterEq := s[eq+1:]
	v := strings.TrimLeft(afterEq, " \t")
	if v == "" || (v[0] == '#' && len(v) < len(afterEq)) {
		// "KEY= # note" is an empty value with a comment.
		return key, "", true, ""
	}
	var rest string
	switch v[0] {
	case '\'':
		end := strings.IndexByte(v[1:], '\'')
		if end < 0 {
			return "", "", false, key + ": unterminated single quote (values cannot span lines)"
		}
		val, rest = v[1:1+end], v[2+end:]
	case '"':
		var closed bool
		val, rest, closed = unquoteDouble(v[1:])
		if !closed {
			return "", "", false, key + `: unterminated double quote (values cannot span lines; write \n for a newline)`
		}
	default:
		return key, unquotedValue(v), true, ""
	}
	rest = strings.TrimLeft(rest, " \t")
	if rest != "" && rest[0] != '#' {
		return "", "", false, key + ": unexpected text after the closing quote"
	}
	return key, val, true, ""
}

// unquoteDouble reads a double-quoted value up to its closing quote. It
// understands \n, \", \\ (and \t, \r); any other backslash is kept as is so
// that Windows paths and regexes need no doubling.
func unquoteDouble(s string) (val, rest string, closed bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), s[i+1:], true
		case c == '\\' && i+1 < len(s):
			switch s[i+1] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '"', '\\':
				b.WriteByte(s[i+1])
			default:
				b.WriteByte('\\')
				b.WriteByte(s[i+1])
			}
			i++
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false
}

// unquotedValue cuts a trailing comment. "#" starts a comment only after
// whitespace, so URLs with fragments and tokens containing "#" survive.
func unquotedValue(v string) string {
	for i := 1; i < len(v); i++ {
		if v[i] == '#' && (v[i-1] == ' ' || v[i-1] == '\t') {
			v = v[:i]
			break
		}
	}
	return strings.TrimRight(v, " \t")
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
