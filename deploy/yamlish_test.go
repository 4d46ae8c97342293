package deploy_test

import (
	"fmt"
	"strings"
)

// node is a block-style YAML value: a scalar, a mapping or a sequence.
// go.mod has no YAML library, and compose.yaml only needs this subset
// (flow sequences such as ["CMD", "x"] stay scalars).
type node struct {
	scalar string
	keys   []string
	m      map[string]*node
	list   []*node
}

func (n *node) get(path ...string) *node {
	for _, k := range path {
		if n == nil || n.m == nil {
			return nil
		}
		n = n.m[k]
	}
	return n
}

func (n *node) str() string {
	if n == nil {
		return ""
	}
	return n.scalar
}

// strings returns a sequence's scalars.
func (n *node) strings() []string {
	if n == nil {
		return nil
	}
	var out []string
	for _, e := range n.list {
		out = append(out, e.scalar)
	}
	return out
}

type yamlLine struct {
	indent int
	text   string
	num    int
}

func parseYAML(src string) (*node, error) {
	var lines []yamlLine
	for i, raw := range strings.Split(src, "\n") {
		trimmed := strings.TrimLeft(raw, " ")
		if strings.ContainsRune(raw, '\t') {
			return nil, fmt.Errorf("line %d: a tab (YAML indents with spaces)", i+1)
		}
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		trimmed = stripComment(trimmed)
		lines = append(lines, yamlLine{indent: len(raw) - len(strings.TrimLeft(raw, " ")), text: strings.TrimRight(trimmed, " "), num: i + 1})
	}
	n, rest, err := parseBlock(lines, 0)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("line %d: unexpected indentation", rest[0].num)
	}
	return n, nil
}

func unquote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// parseBlock reads the lines at exactly indent as one mapping or sequence.
func parseBlock(lines []yamlLine, indent int) (*node, []yamlLine, error) {
	n := &node{}
	for len(lines) > 0 {
		l := lines[0]
		if l.indent < indent {
			break
		}
		if l.indent > indent {
			return nil, nil, fmt.Errorf("line %d: unexpected indentation", l.num)
		}
		item, isItem := strings.CutPrefix(l.text, "- ")
		isItem = isItem || l.text == "-"
		if n.list != nil && !isItem {
			break // the end of a sequence written at its key's indentation
		}
		lines = lines[1:]
		if isItem {
			if n.m != nil {
				return nil, nil, fmt.Errorf("line %d: a list item inside a mapping", l.num)
			}
			n.list = append(n.list, &node{scalar: unquote(item)})
			continue
		}
		key, value, ok := strings.Cut(l.text, ":")
		if !ok {
			return nil, nil, fmt.Errorf("line %d: want key: value", l.num)
		}
		key = unquote(key)
		if n.m == nil {
			n.m = map[string]*node{}
		}
		if _, dup := n.m[key]; dup {
			return nil, nil, fmt.Errorf("line %d: %s appears twice", l.num, key)
		}
		child := &node{scalar: unquote(value)}
		// A nested block follows a bare key; a sequence may sit at the
		// key's own indentation, as compose files usually write it.
		if strings.TrimSpace(value) == "" && len(lines) > 0 && (lines[0].indent > indent || lines[0].indent == indent && strings.HasPrefix(lines[0].text, "-")) {
			var err error
			if child, lines, err = parseBlock(lines, lines[0].indent); err != nil {
				return nil, nil, err
			}
		}
		n.keys = append(n.keys, key)
		n.m[key] = child
	}
	return n, lines, nil
}

// stripComment cuts a " #" comment that is outside quotes.
func stripComment(s string) string {
	var quote byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && i > 0 && s[i-1] == ' ':
			return s[:i-1]
		}
	}
	return s
}
