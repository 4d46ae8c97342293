package hook

// A small bash parser. The predicates never run the command; they need to
// know which simple commands a command line would run, with which words and
// redirections, so that an allowlist (ro) or a denylist (guard) can be
// applied to every one of them, including those hidden in $(...), `...`,
// <(...), subshells, groups, loops and conditionals. Whatever this parser
// does not understand is an error, and both predicates deny on error: a
// gate that guesses is a gate that can be walked around.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits keep a hostile command from turning the hook into a CPU sink.
const (
	maxNest     = 12   // substitutions within substitutions, bash -c within bash -c
	maxCommands = 4000 // simple commands in one command line, all levels
	maxLexDepth = 64   // ${ inside ${, $( inside $( while scanning
	maxParse    = 200  // compound commands inside compound commands
)

var errTooDeep = errors.New("command nests too deeply")

type partKind uint8

const (
	partLit   partKind = iota // literal text, already unquoted/unescaped
	partParam                 // $name, ${...}
	partCmd                   // $(...) or `...`
	partProc                  // <(...) or >(...)
	partArith                 // $((...))
)

// part is one piece of a word.
type part struct {
	kind   partKind
	text   string // lit: the text; param: the name; cmd/proc/arith: inner source
	quoted bool   // came from quotes: no globbing, brace or tilde expansion
	op     string // param: "" plain, "#len", "!ind", or the operator (":-", "+", "%", ...)
	nested []part // param: expansions inside the operator's word; arith: inside the expression
	out    bool   // proc: >(...)
	sub    *script
}

// word is one shell word: its source text and its parts.
type word struct {
	raw   string
	parts []part
}

// lit returns the word's value when it contains no expansion.
func (w word) lit() (string, bool) {
	var b strings.Builder
	for _, p := range w.parts {
		if p.kind != partLit {
			return "", false
		}
		b.WriteString(p.text)
	}
	return b.String(), true
}

// plain reports whether the word is an unquoted literal equal to s; that is
// how reserved words are recognised.
func (w word) plain(s string) bool {
	return len(w.parts) == 1 && w.parts[0].kind == partLit && !w.parts[0].quoted && w.parts[0].text == s
}

// partsBuf accumulates a word's parts; literal runs go through a builder
// so long words cost linear time.
type partsBuf struct {
	parts []part
	lit   strings.Builder
	q     bool
	has   bool
}

func (b *partsBuf) addLit(s string, quoted bool) {
	if b.has && b.q != quoted {
		b.flush()
	}
	b.lit.WriteString(s)
	b.q, b.has = quoted, true
}

func (b *partsBuf) add(p part) {
	if p.kind == partLit {
		b.addLit(p.text, p.quoted)
		return
	}
	b.flush()
	b.parts = append(b.parts, p)
}

func (b *partsBuf) flush() {
	if b.has {
		b.parts = append(b.parts, part{kind: partLit, text: b.lit.String(), quoted: b.q})
		b.lit.Reset()
		b.has = false
	}
}

func (b *partsBuf) done() []part {
	b.flush()
	return b.parts
}

// heredoc is a here-document: its delimiter and, once the lexer has read
// past the next newline, its body.
type heredoc struct {
	delim  string
	quoted bool // quoted delimiter: the body is literal
	strip  bool // <<- strips leading tabs
	body   string
	parts  []part // the body's expansions when unquoted
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tWord
	tOp    // control operators, "\n" included
	tRedir // redirection operators; fd holds an explicit descriptor
	tArith // ((...)) as a command
)

type token struct {
	kind       tokKind
	val        string
	fd         string
	w          word
	start, end int
}

type lexer struct {
	src     string
	pos     int
	pending []*heredoc
	depth   int // nesting of ${...} operands and the like
}

func isMeta(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ';', '&', '|', '(', ')', '<', '>':
		return true
	}
	return false
}

func (l *lexer) skipBlanks() {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			l.pos++
		case c == '\\' && l.pos+1 < len(l.src) && l.src[l.pos+1] == '\n':
			l.pos += 2
		case c == '#':
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.pos++
			}
		default:
			return
		}
	}
}

func (l *lexer) next() (token, error) {
	l.skipBlanks()
	start := l.pos
	if l.pos >= len(l.src) {
		// A here-document cut off by the end of input: bash runs it with
		// what there is (and warns); so do we.
		l.pending = nil
		return token{kind: tEOF, start: start, end: start}, nil
	}
	s := l.src[l.pos:]
	c := s[0]
	op := func(v string) (token, error) {
		l.pos += len(v)
		return token{kind: tOp, val: v, start: start, end: l.pos}, nil
	}
	redir := func(v, fd string) (token, error) {
		l.pos += len(v)
		return token{kind: tRedir, val: v, fd: fd, start: start, end: l.pos}, nil
	}
	switch c {
	case '\n':
		l.pos++
		if err := l.readHeredocs(); err != nil {
			return token{}, err
		}
		return token{kind: tOp, val: "\n", start: start, end: l.pos}, nil
	case ';':
		for _, v := range []string{";;&", ";;", ";&", ";"} {
			if strings.HasPrefix(s, v) {
				return op(v)
			}
		}
	case '&':
		switch {
		case strings.HasPrefix(s, "&&"):
			return op("&&")
		case strings.HasPrefix(s, "&>>"):
			return redir("&>>", "")
		case strings.HasPrefix(s, "&>"):
			return redir("&>", "")
		}
		return op("&")
	case '|':
		for _, v := range []string{"||", "|&", "|"} {
			if strings.HasPrefix(s, v) {
				return op(v)
			}
		}
	case '(':
		if strings.HasPrefix(s, "((") {
			end, err := matchArith(l.src, l.pos+2, l.depth)
			if err != nil {
				return token{}, err
			}
			inner := l.src[l.pos+2 : end]
			l.pos = end + 2
			return token{kind: tArith, val: inner, start: start, end: l.pos}, nil
		}
		return op("(")
	case ')':
		return op(")")
	case '<', '>':
		if len(s) > 1 && s[1] == '(' {
			return l.wordToken(start)
		}
		return l.redirOp("")
	}
	if c >= '0' && c <= '9' {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i < len(s) && (s[i] == '<' || s[i] == '>') && !(i+1 < len(s) && s[i+1] == '(') {
			l.pos += i
			t, err := l.redirOp(s[:i])
			t.start = start
			return t, err
		}
	}
	return l.wordToken(start)
}

func (l *lexer) redirOp(fd string) (token, error) {
	s := l.src[l.pos:]
	start := l.pos
	for _, v := range []string{"<<<", "<<-", "<<", "<&", "<>", ">>", ">&", ">|", "<", ">"} {
		if strings.HasPrefix(s, v) {
			l.pos += len(v)
			return token{kind: tRedir, val: v, fd: fd, start: start, end: l.pos}, nil
		}
	}
	return token{}, fmt.Errorf("bad redirection at %d", l.pos)
}

func (l *lexer) wordToken(start int) (token, error) {
	w, err := l.readWord(false)
	if err != nil {
		return token{}, err
	}
	if l.pos == start {
		return token{}, fmt.Errorf("unexpected %q at %d", l.src[l.pos], l.pos)
	}
	return token{kind: tWord, w: w, start: start, end: l.pos}, nil
}

// readWord reads one word from l.pos. In loose mode metacharacters and
// blanks are ordinary characters (used for ${x:-word} operands).
func (l *lexer) readWord(loose bool) (word, error) {
	start := l.pos
	var b partsBuf
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		if !loose && (c == '<' || c == '>') && l.pos+1 < len(l.src) && l.src[l.pos+1] == '(' && l.pos == start {
			end, err := scanBalanced(l.src, l.pos+2, '(', ')', l.depth)
			if err != nil {
				return word{}, err
			}
			b.add(part{kind: partProc, text: l.src[l.pos+2 : end], out: c == '>'})
			l.pos = end + 1
			continue
		}
		if !loose && isMeta(c) {
			break
		}
		switch c {
		case '\\':
			if l.pos+1 >= len(l.src) {
				b.addLit("\\", true)
				l.pos++
				continue
			}
			if l.src[l.pos+1] == '\n' {
				l.pos += 2
				continue
			}
			_, n := utf8.DecodeRuneInString(l.src[l.pos+1:])
			b.addLit(l.src[l.pos+1:l.pos+1+n], true)
			l.pos += 1 + n
		case '\'':
			end := strings.IndexByte(l.src[l.pos+1:], '\'')
			if end < 0 {
				return word{}, errors.New("unterminated single quote")
			}
			b.addLit(l.src[l.pos+1:l.pos+1+end], true)
			l.pos += end + 2
		case '"':
			l.pos++
			ps, err := l.readDouble(false)
			if err != nil {
				return word{}, err
			}
			for _, p := range ps {
				if p.kind == partLit {
					p.quoted = true
				}
				b.add(p)
			}
		case '$':
			ps, err := l.readDollar(false)
			if err != nil {
				return word{}, err
			}
			for _, p := range ps {
				b.add(p)
			}
		case '`':
			p, err := l.readBacktick()
			if err != nil {
				return word{}, err
			}
			b.add(p)
		default:
			// a run of ordinary characters in one go
			j := l.pos + 1
			for j < len(l.src) {
				d := l.src[j]
				if d == '\\' || d == '\'' || d == '"' || d == '$' || d == '`' || (!loose && isMeta(d)) {
					break
				}
				j++
			}
			b.addLit(l.src[l.pos:j], false)
			l.pos = j
		}
	}
	return word{raw: l.src[start:l.pos], parts: b.done()}, nil
}

// readDouble reads the inside of "..." (l.pos just after the opening
// quote). In heredoc mode there is no closing quote: it reads to the end.
func (l *lexer) readDouble(heredoc bool) ([]part, error) {
	var b partsBuf
	for {
		if l.pos >= len(l.src) {
			if heredoc {
				return b.done(), nil
			}
			return nil, errors.New("unterminated double quote")
		}
		c := l.src[l.pos]
		switch {
		case c == '"' && !heredoc:
			l.pos++
			b.addLit("", true) // "" is an empty word, not no word
			return b.done(), nil
		case c == '\\':
			if l.pos+1 < len(l.src) {
				n := l.src[l.pos+1]
				if n == '\n' {
					l.pos += 2
					continue
				}
				if n == '$' || n == '`' || n == '\\' || (n == '"' && !heredoc) {
					b.addLit(string(n), true)
					l.pos += 2
					continue
				}
			}
			b.addLit("\\", true)
			l.pos++
		case c == '$':
			ps, err := l.readDollar(true)
			if err != nil {
				return nil, err
			}
			for _, p := range ps {
				p.quoted = true
				b.add(p)
			}
		case c == '`':
			p, err := l.readBacktick()
			if err != nil {
				return nil, err
			}
			p.quoted = true
			b.add(p)
		default:
			j := l.pos + 1
			for j < len(l.src) && l.src[j] != '"' && l.src[j] != '\\' && l.src[j] != '$' && l.src[j] != '`' {
				j++
			}
			b.addLit(l.src[l.pos:j], true)
			l.pos = j
		}
	}
}

func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isNameChar(c byte) bool  { return isNameStart(c) || c >= '0' && c <= '9' }

// readDollar reads an expansion starting at '$'.
func (l *lexer) readDollar(inDouble bool) ([]part, error) {
	s := l.src[l.pos:]
	if len(s) < 2 {
		l.pos++
		return []part{{kind: partLit, text: "$"}}, nil
	}
	n := s[1]
	switch {
	case n == '\'' && !inDouble:
		text, used, err := ansiC(s[2:])
		if err != nil {
			return nil, err
		}
		l.pos += 2 + used
		return []part{{kind: partLit, text: text, quoted: true}}, nil
	case n == '"' && !inDouble:
		l.pos += 2
		return l.readDouble(false)
	case n == '(' && len(s) > 2 && s[2] == '(':
		end, err := matchArith(l.src, l.pos+3, l.depth)
		if err != nil {
			return nil, err
		}
		inner := l.src[l.pos+3 : end]
		l.pos = end + 2
		nested, err := lexLoose(inner, l.depth)
		if err != nil {
			return nil, err
		}
		return []part{{kind: partArith, text: inner, nested: nested}}, nil
	case n == '(':
		end, err := scanBalanced(l.src, l.pos+2, '(', ')', l.depth)
		if err != nil {
			return nil, err
		}
		inner := l.src[l.pos+2 : end]
		l.pos = end + 1
		return []part{{kind: partCmd, text: inner}}, nil
	case n == '{':
		end, err := scanBalanced(l.src, l.pos+2, '{', '}', l.depth)
		if err != nil {
			return nil, err
		}
		inner := l.src[l.pos+2 : end]
		l.pos = end + 1
		p, err := parseParamExpr(inner, l.depth)
		if err != nil {
			return nil, err
		}
		return []part{p}, nil
	case isNameStart(n):
		i := 1
		for i < len(s) && isNameChar(s[i]) {
			i++
		}
		l.pos += i
		return []part{{kind: partParam, text: s[1:i]}}, nil
	case n >= '0' && n <= '9' || strings.IndexByte("@*#?-$!", n) >= 0:
		l.pos += 2
		return []part{{kind: partParam, text: string(n)}}, nil
	}
	l.pos++
	return []part{{kind: partLit, text: "$"}}, nil
}

func (l *lexer) readBacktick() (part, error) {
	var b strings.Builder
	i := l.pos + 1
	for i < len(l.src) {
		c := l.src[i]
		if c == '\\' && i+1 < len(l.src) {
			n := l.src[i+1]
			if n == '`' || n == '$' || n == '\\' {
				b.WriteByte(n)
				i += 2
				continue
			}
			b.WriteByte(c)
			i++
			continue
		}
		if c == '`' {
			l.pos = i + 1
			return part{kind: partCmd, text: b.String()}, nil
		}
		b.WriteByte(c)
		i++
	}
	return part{}, errors.New("unterminated backquote")
}

// readParamName reads a parameter name at the start of s.
func readParamName(s string) (name, rest string) {
	if s == "" {
		return "", ""
	}
	c := s[0]
	switch {
	case isNameStart(c):
		i := 1
		for i < len(s) && isNameChar(s[i]) {
			i++
		}
		return s[:i], s[i:]
	case c >= '0' && c <= '9':
		i := 1
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return s[:i], s[i:]
	case strings.IndexByte("@*#?-$!", c) >= 0:
		return s[:1], s[1:]
	}
	return "", s
}

var paramOps = []string{":-", ":=", ":?", ":+", "##", "%%", "//", "/#", "/%", "^^", ",,", "-", "=", "?", "+", "#", "%", "/", "^", ",", "@", ":"}

// parseParamExpr parses the inside of ${...}.
func parseParamExpr(s string, depth int) (part, error) {
	p := part{kind: partParam}
	if s == "" {
		return p, errors.New("bad substitution ${}")
	}
	if s[0] == '#' && len(s) > 1 {
		if name, rest := readParamName(s[1:]); name != "" && (rest == "" || rest[0] == '[') {
			p.text, p.op = name, "#len"
			return p, nil
		}
	}
	if s[0] == '!' && len(s) > 1 {
		name, rest := readParamName(s[1:])
		if name == "" {
			return p, fmt.Errorf("bad substitution ${%s}", s)
		}
		p.text, p.op = name, "!ind"
		nested, err := lexLoose(rest, depth)
		p.nested = nested
		return p, err
	}
	name, rest := readParamName(s)
	if name == "" {
		return p, fmt.Errorf("bad substitution ${%s}", s)
	}
	p.text = name
	if strings.HasPrefix(rest, "[") {
		end, err := scanBalanced(rest, 1, '[', ']', depth)
		if err != nil {
			return p, err
		}
		sub, err := lexLoose(rest[1:end], depth)
		if err != nil {
			return p, err
		}
		p.nested = append(p.nested, sub...)
		rest = rest[end+1:]
	}
	if rest == "" {
		return p, nil
	}
	for _, op := range paramOps {
		if strings.HasPrefix(rest, op) {
			p.op = op
			nested, err := lexLoose(rest[len(op):], depth)
			if err != nil {
				return p, err
			}
			p.nested = append(p.nested, nested...)
			return p, nil
		}
	}
	return p, fmt.Errorf("bad substitution ${%s}", s)
}

// lexLoose reads s as one word in which blanks and metacharacters are
// ordinary: the operand of ${x:-word}, an arithmetic expression.
func lexLoose(s string, depth int) ([]part, error) {
	if depth > maxLexDepth {
		return nil, errTooDeep
	}
	if s == "" {
		return nil, nil
	}
	l := &lexer{src: s, depth: depth + 1}
	w, err := l.readWord(true)
	if err != nil {
		return nil, err
	}
	return w.parts, nil
}

// ansiC decodes the body of $'...' and returns the text and the bytes used
// including the closing quote. Obfuscations like $'\x63at' decode to what
// bash would run.
func ansiC(s string) (string, int, error) {
	var b strings.Builder
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '\'' {
			return b.String(), i + 1, nil
		}
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		e := s[i+1]
		i += 2
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'e', 'E':
			b.WriteByte(27)
		case 'f':
			b.WriteByte(12)
		case 'v':
			b.WriteByte(11)
		case '\\', '\'', '"', '?':
			b.WriteByte(e)
		case 'x':
			j := i
			for j < len(s) && j < i+2 && isHex(s[j]) {
				j++
			}
			if j == i {
				b.WriteString("\\x")
				continue
			}
			v, _ := strconv.ParseUint(s[i:j], 16, 8)
			b.WriteByte(byte(v))
			i = j
		case 'u', 'U':
			max := 4
			if e == 'U' {
				max = 8
			}
			j := i
			for j < len(s) && j < i+max && isHex(s[j]) {
				j++
			}
			if j == i {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			v, _ := strconv.ParseUint(s[i:j], 16, 32)
			b.WriteRune(rune(v))
			i = j
		case 'c':
			if i < len(s) {
				b.WriteByte(s[i] & 0x1f)
				i++
			}
		default:
			if e >= '0' && e <= '7' {
				j := i - 1
				k := j
				for k < len(s) && k < j+3 && s[k] >= '0' && s[k] <= '7' {
					k++
				}
				v, _ := strconv.ParseUint(s[j:k], 8, 16)
				b.WriteByte(byte(v))
				i = k
				continue
			}
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return "", 0, errors.New("unterminated $'...'")
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// scanBalanced finds the closing byte matching an already-consumed opening
// one, starting at i, skipping quotes, escapes and nested expansions. It
// returns the index of the closing byte.
func scanBalanced(s string, i int, open, close byte, nest int) (int, error) {
	if nest > maxLexDepth {
		return 0, errTooDeep
	}
	depth := 1
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\\':
			i += 2
			continue
		case c == '\'' && open != '[':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return 0, errors.New("unterminated single quote")
			}
			i += j + 2
			continue
		case c == '"' && open != '[':
			j, err := skipDouble(s, i+1, nest)
			if err != nil {
				return 0, err
			}
			i = j
			continue
		case c == '`':
			j, err := skipBackquote(s, i)
			if err != nil {
				return 0, err
			}
			i = j
			continue
		case c == '$' && i+1 < len(s) && (s[i+1] == '{' || s[i+1] == '(') && !(s[i+1] == open):
			j, err := skipExpansion(s, i, nest)
			if err != nil {
				return 0, err
			}
			i = j
			continue
		case c == '#' && open == '(' && (i == 0 || strings.IndexByte(" \t\n;&|(", s[i-1]) >= 0):
			for i < len(s) && s[i] != '\n' {
				i++
			}
			continue
		case c == open:
			depth++
		case c == close:
			depth--
			if depth == 0 {
				return i, nil
			}
		}
		i++
	}
	return 0, fmt.Errorf("unterminated %c", open)
}

// skipExpansion returns the index just past the "${...}" or "$(...)" whose
// "$" is at i (the caller has seen the opening brace or parenthesis).
func skipExpansion(s string, i int, nest int) (int, error) {
	cl := byte('}')
	if s[i+1] == '(' {
		cl = ')'
	}
	j, err := scanBalanced(s, i+2, s[i+1], cl, nest+1)
	if err != nil {
		return 0, err
	}
	return j + 1, nil
}

// skipBackquote returns the index just past the backquote that closes the
// one at i.
func skipBackquote(s string, i int) (int, error) {
	j := i + 1
	for j < len(s) && s[j] != '`' {
		if s[j] == '\\' {
			j++
		}
		j++
	}
	if j >= len(s) {
		return 0, errors.New("unterminated backquote")
	}
	return j + 1, nil
}

// skipDouble returns the index just past the closing double quote.
func skipDouble(s string, i int, nest int) (int, error) {
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\\':
			i += 2
			continue
		case c == '"':
			return i + 1, nil
		case c == '`':
			j, err := skipBackquote(s, i)
			if err != nil {
				return 0, err
			}
			i = j
			continue
		case c == '$' && i+1 < len(s) && (s[i+1] == '{' || s[i+1] == '('):
			j, err := skipExpansion(s, i, nest)
			if err != nil {
				return 0, err
			}
			i = j
			continue
		}
		i++
	}
	return 0, errors.New("unterminated double quote")
}

// matchArith finds the "))" closing an arithmetic expression whose inside
// starts at i; it returns the index of the first ')'.
func matchArith(s string, i int, nest int) (int, error) {
	depth := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\\':
			i += 2
			continue
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return 0, errors.New("unterminated quote in arithmetic")
			}
			i += j + 2
			continue
		case c == '$' && i+1 < len(s) && (s[i+1] == '{' || s[i+1] == '(') && !(i+2 < len(s) && s[i+1] == '(' && s[i+2] == '('):
			j, err := skipExpansion(s, i, nest)
			if err != nil {
				return 0, err
			}
			i = j
			continue
		case c == '(':
			depth++
		case c == ')':
			if depth == 0 {
				if i+1 < len(s) && s[i+1] == ')' {
					return i, nil
				}
				return 0, errors.New("unbalanced ) in arithmetic")
			}
			depth--
		}
		i++
	}
	return 0, errors.New("unterminated arithmetic (( ))")
}

// readHeredocs consumes the bodies of the here-documents whose operators
// were on the line just ended.
func (l *lexer) readHeredocs() error {
	docs := l.pending
	l.pending = nil
	for _, h := range docs {
		var body strings.Builder
		for {
			if l.pos >= len(l.src) {
				break // delimited by end of input: bash accepts it
			}
			end := strings.IndexByte(l.src[l.pos:], '\n')
			var line string
			if end < 0 {
				line = l.src[l.pos:]
				l.pos = len(l.src)
			} else {
				line = l.src[l.pos : l.pos+end]
				l.pos += end + 1
			}
			cmp := line
			if h.strip {
				cmp = strings.TrimLeft(line, "\t")
			}
			if cmp == h.delim {
				break
			}
			body.WriteString(cmp)
			body.WriteByte('\n')
		}
		h.body = body.String()
		if !h.quoted {
			sub := &lexer{src: h.body}
			ps, err := sub.readDouble(true)
			if err != nil {
				return err
			}
			h.parts = ps
		}
	}
	return nil
}

// ---- parser ----

type cmdKind uint8

const (
	cmdSimple cmdKind = iota
	cmdData           // words that are only data: for/select lists, case subjects and patterns
	cmdArith          // (( ... )) and for (( ... ))
	cmdTest           // [[ ... ]]
	cmdRedirs         // redirections of a compound command: { ...; } > f
)

type redir struct {
	op     string
	fd     string
	target word
	doc    *heredoc
	dup    bool // >&2, <&0, >&-
}

type assign struct {
	name  string
	value word
	array []word
}

type pipeRef struct{ id, stage int }

// simpleCmd is one simple command with the shell state it runs in.
type simpleCmd struct {
	kind    cmdKind
	assigns []assign
	args    []word
	redirs  []redir
	arith   part
	pipes   []pipeRef // enclosing pipelines, outermost first
	st      *shellState
	nest    int
}

// script is a parsed command line: every simple command it can run,
// flattened, in source order (substitutions follow their command).
type script struct {
	src         string
	procMention *string // cached protectedProcMention(src)
	cmds        []*simpleCmd
	funcs       map[string]bool
	pipeLens    map[int]int
}

// shellState is what the parser tracks while walking a command line: the
// working directory (changed by cd) and variables given literal values, so
// that `d=~/.ssh; cat $d/id_rsa` resolves. It is never mutated once a
// command points to it.
type shellState struct {
	cwd  string             // absolute; "" when unknown
	vars map[string]*string // nil value: assigned, value unknown
	// work is shared by every state of one command line: the pattern
	// elements all word expansions may still produce. When it runs out the
	// command is too complex to check, and is denied.
	work *int
}

// maxWork bounds the expansion work for one command line.
const maxWork = 8 << 20

func (s *shellState) with(f func(n *shellState)) *shellState {
	n := &shellState{cwd: s.cwd, vars: make(map[string]*string, len(s.vars)+1), work: s.work}
	for k, v := range s.vars {
		n.vars[k] = v
	}
	f(n)
	return n
}

type parser struct {
	lex      *lexer
	peeked   *token
	sc       *script
	st       *shellState
	pipes    []pipeRef
	nextPipe *int
	nest     int
	depth    int // compound commands being parsed, for maxParse
	err      error
}

func parseInto(sc *script, src string, st *shellState, pipes []pipeRef, nest int, nextPipe *int) error {
	if nest > maxNest {
		return errTooDeep
	}
	p := &parser{lex: &lexer{src: src}, sc: sc, st: st, pipes: pipes, nextPipe: nextPipe, nest: nest}
	if err := p.parseList(nil, nil); err != nil {
		return err
	}
	if p.err != nil {
		return p.err
	}
	t, err := p.peek()
	if err != nil {
		return err
	}
	if t.kind != tEOF {
		return fmt.Errorf("unexpected %s", t.describe())
	}
	return nil
}

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of command"
	case tWord:
		return strconv.Quote(t.w.raw)
	case tArith:
		return "(( ))"
	}
	if t.val == "\n" {
		return "newline"
	}
	return strconv.Quote(t.val)
}

// peek returns the next token. A lexer error is sticky: every later peek
// returns it too, so a lookahead that ignores errors cannot make the
// parser skip text it failed to read.
func (p *parser) peek() (token, error) {
	if p.err != nil {
		return token{}, p.err
	}
	if p.peeked != nil {
		return *p.peeked, nil
	}
	t, err := p.lex.next()
	if err != nil {
		p.err = err
		return t, err
	}
	p.peeked = &t
	return t, nil
}

func (p *parser) next() (token, error) {
	t, err := p.peek()
	p.peeked = nil
	return t, err
}

func (p *parser) isOp(t token, ops ...string) bool {
	if t.kind != tOp {
		return false
	}
	for _, o := range ops {
		if t.val == o {
			return true
		}
	}
	return false
}

func (p *parser) isWord(t token, ws ...string) bool {
	if t.kind != tWord {
		return false
	}
	for _, w := range ws {
		if t.w.plain(w) {
			return true
		}
	}
	return false
}

func (p *parser) skipNewlines() error {
	for {
		t, err := p.peek()
		if err != nil {
			return err
		}
		if !p.isOp(t, "\n") {
			return nil
		}
		p.next()
	}
}

func (p *parser) expectWord(w string) error {
	if err := p.skipNewlines(); err != nil {
		return err
	}
	t, err := p.next()
	if err != nil {
		return err
	}
	if !p.isWord(t, w) {
		return fmt.Errorf("expected %q, got %s", w, t.describe())
	}
	return nil
}

func (p *parser) expectOp(o string) error {
	t, err := p.next()
	if err != nil {
		return err
	}
	if !p.isOp(t, o) {
		return fmt.Errorf("expected %q, got %s", o, t.describe())
	}
	return nil
}

// parseList parses commands until EOF or, at a command position, one of
// the stop words or stop operators (not consumed).
func (p *parser) parseList(stopWords, stopOps []string) error {
	stop := func(t token) bool {
		return p.isWord(t, stopWords...) || p.isOp(t, stopOps...)
	}
	for {
		if err := p.skipNewlines(); err != nil {
			return err
		}
		t, err := p.peek()
		if err != nil {
			return err
		}
		if t.kind == tEOF || stop(t) {
			return nil
		}
		if err := p.parseAndOr(); err != nil {
			return err
		}
		t, err = p.peek()
		if err != nil {
			return err
		}
		switch {
		case p.isOp(t, ";", "&", "\n"):
			p.next()
		case t.kind == tEOF || stop(t):
			return nil
		default:
			return fmt.Errorf("unexpected %s", t.describe())
		}
	}
}

func (p *parser) parseAndOr() error {
	for {
		if err := p.parsePipeline(); err != nil {
			return err
		}
		t, err := p.peek()
		if err != nil {
			return err
		}
		if !p.isOp(t, "&&", "||") {
			return nil
		}
		p.next()
		if err := p.skipNewlines(); err != nil {
			return err
		}
	}
}

func (p *parser) parsePipeline() error {
	id := *p.nextPipe
	*p.nextPipe++
	saved := p.st
	outer := p.pipes
	stage := 0
	var last *simpleCmd
	for {
		t, err := p.peek()
		if err != nil {
			return err
		}
		if stage == 0 && p.isWord(t, "!") {
			p.next()
			continue
		}
		if stage == 0 && p.isWord(t, "time") {
			p.next()
			if t2, err := p.peek(); err == nil && p.isWord(t2, "-p") {
				p.next()
			}
			continue
		}
		p.pipes = append(append([]pipeRef(nil), outer...), pipeRef{id, stage})
		last, err = p.parseCommand()
		p.pipes = outer
		if err != nil {
			return err
		}
		t, err = p.peek()
		if err != nil {
			return err
		}
		if !p.isOp(t, "|", "|&") {
			break
		}
		p.next()
		if err := p.skipNewlines(); err != nil {
			return err
		}
		stage++
	}
	p.sc.pipeLens[id] = stage + 1
	if stage > 0 {
		// Every stage of a pipeline runs in a subshell: cd and assignments
		// there do not reach the commands after it.
		p.st = saved
	} else if last != nil {
		p.applyEffects(last)
	}
	return nil
}

func (p *parser) add(c *simpleCmd) error {
	if len(p.sc.cmds) >= maxCommands {
		return errors.New("command line too long to check")
	}
	c.pipes = p.pipes
	c.st = p.st
	c.nest = p.nest
	p.sc.cmds = append(p.sc.cmds, c)
	return p.parseSubsOf(c)
}

// parseCommand parses one command; it returns the simple command when the
// command was a plain simple command (for cd/assignment tracking).
func (p *parser) parseCommand() (*simpleCmd, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxParse {
		return nil, errTooDeep
	}
	t, err := p.peek()
	if err != nil {
		return nil, err
	}
	switch {
	case t.kind == tArith:
		p.next()
		nested, err := lexLoose(t.val, 0)
		if err != nil {
			return nil, err
		}
		if err := p.add(&simpleCmd{kind: cmdArith, arith: part{kind: partArith, text: t.val, nested: nested}}); err != nil {
			return nil, err
		}
		return nil, p.trailingRedirs()
	case p.isOp(t, "("):
		p.next()
		saved := p.st
		if err := p.parseList(nil, []string{")"}); err != nil {
			return nil, err
		}
		p.st = saved
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return nil, p.trailingRedirs()
	case t.kind != tWord:
		if t.kind == tRedir {
			return p.parseSimple()
		}
		return nil, fmt.Errorf("unexpected %s", t.describe())
	}
	w := t.w
	switch {
	case w.plain("{"):
		p.next()
		if err := p.parseList([]string{"}"}, nil); err != nil {
			return nil, err
		}
		if err := p.expectWord("}"); err != nil {
			return nil, err
		}
		return nil, p.trailingRedirs()
	case w.plain("if"):
		p.next()
		if err := p.parseList([]string{"then"}, nil); err != nil {
			return nil, err
		}
		if err := p.expectWord("then"); err != nil {
			return nil, err
		}
		for {
			if err := p.parseList([]string{"elif", "else", "fi"}, nil); err != nil {
				return nil, err
			}
			t, err := p.next()
			if err != nil {
				return nil, err
			}
			switch {
			case p.isWord(t, "fi"):
				return nil, p.trailingRedirs()
			case p.isWord(t, "else"):
				if err := p.parseList([]string{"fi"}, nil); err != nil {
					return nil, err
				}
				if err := p.expectWord("fi"); err != nil {
					return nil, err
				}
				return nil, p.trailingRedirs()
			case p.isWord(t, "elif"):
				if err := p.parseList([]string{"then"}, nil); err != nil {
					return nil, err
				}
				if err := p.expectWord("then"); err != nil {
					return nil, err
				}
			default:
				return nil, fmt.Errorf("expected fi, got %s", t.describe())
			}
		}
	case w.plain("while"), w.plain("until"):
		p.next()
		if err := p.parseList([]string{"do"}, nil); err != nil {
			return nil, err
		}
		return nil, p.parseDoDone()
	case w.plain("for"), w.plain("select"):
		p.next()
		return nil, p.parseFor()
	case w.plain("case"):
		p.next()
		return nil, p.parseCase()
	case w.plain("function"):
		p.next()
		t, err := p.next()
		if err != nil {
			return nil, err
		}
		if t.kind != tWord {
			return nil, fmt.Errorf("bad function name %s", t.describe())
		}
		name, _ := t.w.lit()
		if t2, err := p.peek(); err == nil && p.isOp(t2, "(") {
			p.next()
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
		}
		return nil, p.parseFuncBody(name)
	case w.plain("[["):
		p.next()
		return nil, p.parseTest()
	case w.plain("coproc"):
		p.next()
		return p.parseCommand()
	case w.plain("!"):
		p.next()
		return p.parseCommand()
	}
	for _, kw := range []string{"then", "else", "elif", "fi", "do", "done", "esac", "}", "in", "]]"} {
		if w.plain(kw) {
			return nil, fmt.Errorf("unexpected %q", kw)
		}
	}
	return p.parseSimple()
}

func (p *parser) parseDoDone() error {
	if err := p.expectWord("do"); err != nil {
		return err
	}
	if err := p.parseList([]string{"done"}, nil); err != nil {
		return err
	}
	if err := p.expectWord("done"); err != nil {
		return err
	}
	return p.trailingRedirs()
}

func (p *parser) parseFuncBody(name string) error {
	if name != "" {
		p.sc.funcs[name] = true
	}
	if err := p.skipNewlines(); err != nil {
		return err
	}
	// The body is checked as if it ran: calling the function runs it.
	saved := p.st
	_, err := p.parseCommand()
	p.st = saved
	return err
}

func (p *parser) parseFor() error {
	t, err := p.next()
	if err != nil {
		return err
	}
	if t.kind == tArith {
		nested, err := lexLoose(t.val, 0)
		if err != nil {
			return err
		}
		if err := p.add(&simpleCmd{kind: cmdArith, arith: part{kind: partArith, text: t.val, nested: nested}}); err != nil {
			return err
		}
	} else {
		if t.kind != tWord {
			return fmt.Errorf("bad for variable %s", t.describe())
		}
		name, _ := t.w.lit()
		// The loop variable takes values we do not track.
		p.st = p.st.with(func(n *shellState) { n.vars[name] = nil })
		if err := p.skipNewlines(); err != nil {
			return err
		}
		t2, err := p.peek()
		if err != nil {
			return err
		}
		if p.isWord(t2, "in") {
			p.next()
			data := &simpleCmd{kind: cmdData}
			for {
				t3, err := p.peek()
				if err != nil {
					return err
				}
				if t3.kind != tWord {
					break
				}
				p.next()
				data.args = append(data.args, t3.w)
			}
			if err := p.add(data); err != nil {
				return err
			}
		}
	}
	t, err = p.peek()
	if err != nil {
		return err
	}
	if p.isOp(t, ";", "\n") {
		p.next()
	}
	if err := p.skipNewlines(); err != nil {
		return err
	}
	t, err = p.peek()
	if err != nil {
		return err
	}
	if p.isWord(t, "{") {
		_, err := p.parseCommand()
		return err
	}
	return p.parseDoDone()
}

func (p *parser) parseCase() error {
	t, err := p.next()
	if err != nil {
		return err
	}
	if t.kind != tWord {
		return fmt.Errorf("bad case subject %s", t.describe())
	}
	if err := p.add(&simpleCmd{kind: cmdData, args: []word{t.w}}); err != nil {
		return err
	}
	if err := p.expectWord("in"); err != nil {
		return err
	}
	for {
		if err := p.skipNewlines(); err != nil {
			return err
		}
		t, err := p.peek()
		if err != nil {
			return err
		}
		if p.isWord(t, "esac") {
			p.next()
			return p.trailingRedirs()
		}
		if p.isOp(t, "(") {
			p.next()
		}
		pats := &simpleCmd{kind: cmdData}
		for {
			t, err := p.next()
			if err != nil {
				return err
			}
			if t.kind != tWord {
				return fmt.Errorf("bad case pattern %s", t.describe())
			}
			pats.args = append(pats.args, t.w)
			t, err = p.next()
			if err != nil {
				return err
			}
			if p.isOp(t, ")") {
				break
			}
			if !p.isOp(t, "|") {
				return fmt.Errorf("bad case pattern near %s", t.describe())
			}
		}
		if err := p.add(pats); err != nil {
			return err
		}
		if err := p.parseList([]string{"esac"}, []string{";;", ";&", ";;&"}); err != nil {
			return err
		}
		t, err = p.peek()
		if err != nil {
			return err
		}
		if p.isOp(t, ";;", ";&", ";;&") {
			p.next()
		} else if !p.isWord(t, "esac") {
			return fmt.Errorf("expected ;; or esac, got %s", t.describe())
		}
	}
}

func (p *parser) parseTest() error {
	c := &simpleCmd{kind: cmdTest, args: []word{{raw: "[[", parts: []part{{kind: partLit, text: "[["}}}}}
	for {
		t, err := p.next()
		if err != nil {
			return err
		}
		switch t.kind {
		case tEOF:
			return errors.New("unterminated [[")
		case tWord:
			c.args = append(c.args, t.w)
			if t.w.plain("]]") {
				if err := p.add(c); err != nil {
					return err
				}
				return p.trailingRedirs()
			}
		case tArith:
			return errors.New("unexpected (( in [[")
		default:
			if t.val == "\n" {
				continue
			}
			c.args = append(c.args, word{raw: t.val, parts: []part{{kind: partLit, text: t.val}}})
		}
	}
}

// trailingRedirs records redirections after a compound command.
func (p *parser) trailingRedirs() error {
	c := &simpleCmd{kind: cmdRedirs}
	for {
		t, err := p.peek()
		if err != nil {
			return err
		}
		if t.kind != tRedir {
			break
		}
		p.next()
		r, err := p.parseRedir(t)
		if err != nil {
			return err
		}
		c.redirs = append(c.redirs, r)
	}
	if len(c.redirs) == 0 {
		return nil
	}
	return p.add(c)
}

func (p *parser) parseRedir(t token) (redir, error) {
	r := redir{op: t.val, fd: t.fd}
	w, err := p.next()
	if err != nil {
		return r, err
	}
	if w.kind != tWord {
		return r, fmt.Errorf("redirection %s without a target", t.val)
	}
	if t.val == "<<" || t.val == "<<-" {
		h := &heredoc{strip: t.val == "<<-"}
		var d strings.Builder
		for _, pt := range w.w.parts {
			if pt.kind == partLit {
				if pt.quoted {
					h.quoted = true
				}
				d.WriteString(pt.text)
			} else {
				// bash uses the delimiter's text unexpanded
				h.quoted = true
				d.WriteString(w.w.raw)
				break
			}
		}
		h.delim = d.String()
		r.doc = h
		p.lex.pending = append(p.lex.pending, h)
		return r, nil
	}
	r.target = w.w
	if t.val == "<&" || t.val == ">&" {
		if v, ok := w.w.lit(); ok && (v == "-" || isDigits(strings.TrimSuffix(v, "-"))) {
			r.dup = true
		}
	}
	return r, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// assignWord splits NAME=value / NAME+=value / NAME[i]=value.
func assignWord(w word) (name string, value word, ok bool) {
	if len(w.parts) == 0 || w.parts[0].kind != partLit || w.parts[0].quoted {
		return "", word{}, false
	}
	first := w.parts[0].text
	i := 0
	if i >= len(first) || !isNameStart(first[i]) {
		return "", word{}, false
	}
	for i < len(first) && isNameChar(first[i]) {
		i++
	}
	name = first[:i]
	if i < len(first) && first[i] == '[' {
		j := strings.IndexByte(first[i:], ']')
		if j < 0 {
			return "", word{}, false
		}
		i += j + 1
	}
	if strings.HasPrefix(first[i:], "+=") {
		i += 2
	} else if strings.HasPrefix(first[i:], "=") {
		i++
	} else {
		return "", word{}, false
	}
	rest := append([]part(nil), w.parts...)
	rest[0].text = first[i:]
	if rest[0].text == "" {
		rest = rest[1:]
	}
	off := strings.Index(w.raw, "=")
	return name, word{raw: w.raw[off+1:], parts: rest}, true
}

func (p *parser) parseSimple() (*simpleCmd, error) {
	c := &simpleCmd{kind: cmdSimple}
	for {
		t, err := p.peek()
		if err != nil {
			return nil, err
		}
		switch t.kind {
		case tWord:
			p.next()
			if len(c.args) == 0 {
				if name, val, ok := assignWord(t.w); ok {
					a := assign{name: name, value: val}
					if n, err := p.peek(); err == nil && p.isOp(n, "(") && n.start == t.end && len(val.parts) == 0 {
						p.next()
						for {
							e, err := p.next()
							if err != nil {
								return nil, err
							}
							if p.isOp(e, ")") {
								break
							}
							if p.isOp(e, "\n") {
								continue
							}
							if e.kind != tWord {
								return nil, fmt.Errorf("bad array element %s", e.describe())
							}
							a.array = append(a.array, e.w)
						}
					}
					c.assigns = append(c.assigns, a)
					continue
				}
			}
			c.args = append(c.args, t.w)
			if len(c.args) == 1 && len(c.assigns) == 0 && len(c.redirs) == 0 {
				if n, err := p.peek(); err == nil && p.isOp(n, "(") {
					// name () body: a function definition.
					p.next()
					if err := p.expectOp(")"); err != nil {
						return nil, err
					}
					name, _ := t.w.lit()
					return nil, p.parseFuncBody(name)
				}
			}
		case tRedir:
			p.next()
			r, err := p.parseRedir(t)
			if err != nil {
				return nil, err
			}
			c.redirs = append(c.redirs, r)
		default:
			if len(c.args) == 0 && len(c.assigns) == 0 && len(c.redirs) == 0 {
				return nil, fmt.Errorf("unexpected %s", t.describe())
			}
			return c, p.add(c)
		}
	}
}

// parseSubsOf parses the command substitutions and process substitutions
// in a command's words; their commands run too, in the same shell state.
func (p *parser) parseSubsOf(c *simpleCmd) error {
	var walk func(ps []part) error
	walk = func(ps []part) error {
		for i := range ps {
			pt := &ps[i]
			if pt.kind == partCmd || pt.kind == partProc {
				before := len(p.sc.cmds)
				if err := parseInto(p.sc, pt.text, c.st, c.pipes, p.nest+1, p.nextPipe); err != nil {
					return err
				}
				pt.sub = &script{cmds: p.sc.cmds[before:len(p.sc.cmds):len(p.sc.cmds)], funcs: p.sc.funcs, pipeLens: p.sc.pipeLens}
			}
			if err := walk(pt.nested); err != nil {
				return err
			}
		}
		return nil
	}
	for i := range c.args {
		if err := walk(c.args[i].parts); err != nil {
			return err
		}
	}
	for i := range c.assigns {
		if err := walk(c.assigns[i].value.parts); err != nil {
			return err
		}
		for j := range c.assigns[i].array {
			if err := walk(c.assigns[i].array[j].parts); err != nil {
				return err
			}
		}
	}
	for i := range c.redirs {
		if err := walk(c.redirs[i].target.parts); err != nil {
			return err
		}
	}
	if c.kind == cmdArith {
		if err := walk(c.arith.nested); err != nil {
			return err
		}
	}
	return nil
}

// heredocSubs parses the substitutions in here-document bodies, which are
// only known once the lexer has passed the end of the line.
func (sc *script) heredocSubs(nextPipe *int) error {
	for i := 0; i < len(sc.cmds); i++ {
		c := sc.cmds[i]
		for _, r := range c.redirs {
			if r.doc == nil || r.doc.quoted {
				continue
			}
			var walk func(ps []part) error
			walk = func(ps []part) error {
				for j := range ps {
					pt := &ps[j]
					if pt.kind == partCmd || pt.kind == partProc {
						before := len(sc.cmds)
						if err := parseInto(sc, pt.text, c.st, c.pipes, c.nest+1, nextPipe); err != nil {
							return err
						}
						pt.sub = &script{cmds: sc.cmds[before:len(sc.cmds):len(sc.cmds)], funcs: sc.funcs, pipeLens: sc.pipeLens}
					}
					if err := walk(pt.nested); err != nil {
						return err
					}
				}
				return nil
			}
			if err := walk(r.doc.parts); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyEffects updates the tracked state after a simple command that ran
// in the current shell: assignments and cd.
func (p *parser) applyEffects(c *simpleCmd) {
	if len(c.args) == 0 {
		if len(c.assigns) == 0 {
			return
		}
		p.st = p.st.with(func(n *shellState) {
			for _, a := range c.assigns {
				if a.array != nil {
					n.vars[a.name] = nil
					continue
				}
				if v, ok := evalLiteral(a.value, p.st, true); ok {
					n.vars[a.name] = &v
				} else {
					n.vars[a.name] = nil
				}
			}
		})
		return
	}
	name, ok := c.args[0].lit()
	if !ok {
		return
	}
	switch name {
	case "cd", "pushd":
		target := "~"
		for _, a := range c.args[1:] {
			v, ok := a.lit()
			if ok && strings.HasPrefix(v, "-") && v != "-" {
				continue
			}
			target = "\x00"
			if ok {
				target = v
			} else if ev, ok2 := evalLiteral(a, p.st, false); ok2 {
				target = ev
			}
			break
		}
		p.st = p.st.with(func(n *shellState) {
			switch {
			case target == "\x00" || target == "-":
				n.cwd = ""
			case target == "~":
				n.cwd = "/root"
			default:
				if strings.HasPrefix(target, "~/") {
					target = "/root" + target[1:]
				}
				n.cwd = joinCwd(p.st.cwd, target)
			}
		})
	case "popd":
		p.st = p.st.with(func(n *shellState) { n.cwd = "" })
	case "read", "mapfile", "readarray", "unset", "export", "declare", "typeset", "local", "readonly", "printf", "getopts", "let":
		// These can set variables; forget the ones they name.
		p.st = p.st.with(func(n *shellState) {
			for _, a := range c.args[1:] {
				v, ok := a.lit()
				if !ok {
					continue
				}
				if nm, val, ok := strings.Cut(v, "="); ok && validName(nm) && (name == "export" || name == "declare" || name == "typeset" || name == "local" || name == "readonly") {
					if strings.HasPrefix(val, "~/") || val == "~" {
						val = "/root" + val[1:]
					}
					vv := val
					n.vars[nm] = &vv
					continue
				}
				if validName(v) {
					n.vars[v] = nil
				}
			}
		})
	}
}

func validName(s string) bool {
	if s == "" || !isNameStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isNameChar(s[i]) {
			return false
		}
	}
	return true
}

// parseShell is the entry point: parse, then the here-document bodies.
func parseShell(src, cwd string) (*script, error) {
	sc := &script{funcs: map[string]bool{}, pipeLens: map[int]int{}}
	n := 0
	work := maxWork
	st := &shellState{cwd: cwd, vars: map[string]*string{}, work: &work}
	if err := parseInto(sc, src, st, nil, 0, &n); err != nil {
		return nil, err
	}
	if err := sc.heredocSubs(&n); err != nil {
		return nil, err
	}
	return sc, nil
}
