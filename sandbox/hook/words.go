package hook

// Turning shell words into the paths they may name. A word can hold
// quotes, globs, braces, ~, variables and substitutions; bash would expand
// it at run time, the hook has to reason about it beforehand. Each word
// becomes one or more patterns (one per brace alternative) over bytes where
// literal bytes stand for themselves, glob characters keep bash's meaning,
// and anything the hook cannot know (a substitution, an unknown variable)
// is a wildcard that matches any string, slashes included. A pattern then
// "may name" a protected path when it matches one of a set of
// representative protected paths; a literal pattern is tested exactly.

import (
	"errors"
	"path"
	"strconv"
	"strings"
)

type pelem struct {
	k   byte // 'c' byte, '*' '?' '[' glob, 'D' unknown, '{' ',' '}' brace markers
	c   byte
	q   bool   // 'c' from quotes: not subject to tilde expansion
	set string // '[': the bracket expression's body
}

type pat []pelem

func (p pat) literal() (string, bool) {
	b := make([]byte, 0, len(p))
	for _, e := range p {
		if e.k != 'c' {
			return "", false
		}
		b = append(b, e.c)
	}
	return string(b), true
}

func (p pat) hasLit() bool {
	for _, e := range p {
		if e.k == 'c' {
			return true
		}
	}
	return false
}

// minLen is the shortest string the pattern can match.
func (p pat) minLen() int {
	n := 0
	for _, e := range p {
		if e.k != '*' && e.k != 'D' {
			n++
		}
	}
	return n
}

func (p pat) String() string {
	var b strings.Builder
	for _, e := range p {
		switch e.k {
		case 'c':
			b.WriteByte(e.c)
		case '[':
			b.WriteString("[" + e.set + "]")
		case 'D':
			b.WriteString("*")
		default:
			b.WriteByte(e.k)
		}
	}
	return b.String()
}

func litPat(s string) pat {
	p := make(pat, len(s))
	for i := 0; i < len(s); i++ {
		p[i] = pelem{k: 'c', c: s[i], q: true}
	}
	return p
}

func (p pat) add(e pelem) pat {
	// Consecutive unknowns and stars collapse: it keeps matching cheap.
	if n := len(p); n > 0 && (e.k == 'D' && p[n-1].k == 'D') {
		return p
	}
	if n := len(p); n > 0 && e.k == '*' && (p[n-1].k == '*' || p[n-1].k == 'D') {
		return p
	}
	return append(p, e)
}

// paramValue returns a parameter's value when the hook knows it.
func paramValue(pt part, st *shellState) (string, bool) {
	if pt.op != "" && pt.op != ":-" && pt.op != "-" {
		return "", false
	}
	if st != nil {
		if v, ok := st.vars[pt.text]; ok {
			if v == nil || (pt.op == ":-" && *v == "") {
				return "", false
			}
			return *v, true
		}
	}
	if pt.op != "" {
		return "", false
	}
	switch pt.text {
	case "HOME":
		return "/root", true
	case "PWD":
		if st != nil && st.cwd != "" {
			return st.cwd, true
		}
	}
	return "", false
}

// elems converts parts to pattern elements.
func elems(ps []part, st *shellState, assignment bool) pat {
	var p pat
	for _, pt := range ps {
		switch pt.kind {
		case partLit:
			if pt.quoted || assignment {
				for i := 0; i < len(pt.text); i++ {
					p = p.add(pelem{k: 'c', c: pt.text[i], q: pt.quoted})
				}
				continue
			}
			s := pt.text
			for i := 0; i < len(s); i++ {
				switch c := s[i]; c {
				case '*', '?':
					p = p.add(pelem{k: c})
				case '[':
					if end := bracketEnd(s, i); end > 0 {
						p = p.add(pelem{k: '[', set: s[i+1 : end]})
						i = end
					} else {
						p = p.add(pelem{k: 'c', c: c})
					}
				case '{', ',', '}':
					p = p.add(pelem{k: c})
				default:
					p = p.add(pelem{k: 'c', c: c})
				}
			}
		case partParam:
			if v, ok := paramValue(pt, st); ok {
				for i := 0; i < len(v); i++ {
					p = p.add(pelem{k: 'c', c: v[i], q: true})
				}
			} else {
				p = p.add(pelem{k: 'D'})
			}
		default:
			p = p.add(pelem{k: 'D'})
		}
	}
	return p
}

// bracketEnd finds the ']' closing a glob bracket expression at s[i].
func bracketEnd(s string, i int) int {
	j := i + 1
	if j < len(s) && (s[j] == '!' || s[j] == '^') {
		j++
	}
	if j < len(s) && s[j] == ']' {
		j++
	}
	for j < len(s) {
		if s[j] == ']' {
			return j
		}
		if s[j] == '/' {
			return -1
		}
		j++
	}
	return -1
}

var (
	errTooManyAlternatives = errors.New("too many brace-expansion alternatives to check")
	errTooComplex          = errors.New("too much expansion to check")
)

const maxBraceResults = 256

// braceExpand expands {a,b} and {1..3} groups like bash.
func braceExpand(p pat, budget *int) ([]pat, error) {
	return braceExpandN(p, budget, 0)
}

func braceExpandN(p pat, budget *int, depth int) ([]pat, error) {
	if depth > 32 {
		return nil, errTooManyAlternatives
	}
	for i := 0; i < len(p); i++ {
		if p[i].k != '{' {
			continue
		}
		depth, j := 0, -1
		var commas []int
	scan:
		for k := i + 1; k < len(p); k++ {
			switch p[k].k {
			case '{':
				depth++
			case '}':
				if depth == 0 {
					j = k
					break scan
				}
				depth--
			case ',':
				if depth == 0 {
					commas = append(commas, k)
				}
			}
		}
		if j < 0 {
			continue
		}
		var alts []pat
		if len(commas) > 0 {
			prev := i + 1
			for _, c := range append(commas, j) {
				alts = append(alts, p[prev:c])
				prev = c + 1
			}
		} else if seq, ok := braceSeq(p[i+1 : j]); ok {
			alts = seq
		} else {
			continue
		}
		var out []pat
		for _, a := range alts {
			np := make(pat, 0, len(p)+len(a))
			np = append(np, p[:i]...)
			np = append(np, a...)
			np = append(np, p[j+1:]...)
			rs, err := braceExpandN(np, budget, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, rs...)
		}
		return out, nil
	}
	*budget--
	if *budget < 0 {
		return nil, errTooManyAlternatives
	}
	q := make(pat, len(p))
	for i, e := range p {
		if e.k == '{' || e.k == ',' || e.k == '}' {
			e = pelem{k: 'c', c: e.k}
		}
		q[i] = e
	}
	return []pat{q}, nil
}

// braceSeq expands the inside of {x..y[..step]}.
func braceSeq(inner pat) ([]pat, bool) {
	s, ok := inner.literal()
	if !ok {
		return nil, false
	}
	fs := strings.Split(s, "..")
	if len(fs) != 2 && len(fs) != 3 {
		return nil, false
	}
	step := 1
	if len(fs) == 3 {
		n, err := strconv.Atoi(fs[2])
		if err != nil || n == 0 {
			return nil, false
		}
		if n < 0 {
			n = -n
		}
		step = n
	}
	var out []pat
	if a, err1 := strconv.Atoi(fs[0]); err1 == nil {
		b, err2 := strconv.Atoi(fs[1])
		if err2 != nil {
			return nil, false
		}
		if a <= b {
			for x := a; x <= b && len(out) <= maxBraceResults; x += step {
				out = append(out, litPat(strconv.Itoa(x)))
			}
		} else {
			for x := a; x >= b && len(out) <= maxBraceResults; x -= step {
				out = append(out, litPat(strconv.Itoa(x)))
			}
		}
		return out, true
	}
	if len(fs[0]) == 1 && len(fs[1]) == 1 {
		a, b := int(fs[0][0]), int(fs[1][0])
		if a <= b {
			for x := a; x <= b; x += step {
				out = append(out, litPat(string(rune(x))))
			}
		} else {
			for x := a; x >= b; x -= step {
				out = append(out, litPat(string(rune(x))))
			}
		}
		return out, true
	}
	return nil, false
}

// tilde expands a leading unquoted ~, ~root, ~user, ~+ or ~-.
func tilde(p pat, cwd string) pat {
	if len(p) == 0 || p[0].k != 'c' || p[0].c != '~' || p[0].q {
		return p
	}
	i := 1
	var name []byte
	for i < len(p) && !(p[i].k == 'c' && p[i].c == '/') {
		if p[i].k != 'c' || p[i].q {
			return p
		}
		name = append(name, p[i].c)
		i++
	}
	var head pat
	switch n := string(name); n {
	case "", "root":
		head = litPat("/root")
	case "+":
		if cwd == "" {
			head = pat{{k: 'D'}}
		} else {
			head = litPat(cwd)
		}
	case "-":
		head = pat{{k: 'D'}}
	default:
		head = litPat("/home/" + n)
	}
	return append(head, p[i:]...)
}

// expandWord returns the patterns a word expands to (brace alternatives),
// with tildes expanded.
func expandWord(w word, st *shellState) ([]pat, error) {
	budget := maxBraceResults
	ps, err := braceExpand(elems(w.parts, st, false), &budget)
	if err != nil {
		return nil, err
	}
	if st != nil && st.work != nil {
		for _, p := range ps {
			*st.work -= len(p) + 1
		}
		if *st.work < 0 {
			return nil, errTooComplex
		}
	}
	cwd := ""
	if st != nil {
		cwd = st.cwd
	}
	for i := range ps {
		ps[i] = tilde(ps[i], cwd)
	}
	return ps, nil
}

// evalLiteral returns the single literal value of a word, or false when it
// depends on anything unknown or expands to several words.
func evalLiteral(w word, st *shellState, assignment bool) (string, bool) {
	p := elems(w.parts, st, assignment)
	if !assignment {
		budget := 2
		ps, err := braceExpand(p, &budget)
		if err != nil || len(ps) != 1 {
			return "", false
		}
		p = ps[0]
	}
	cwd := ""
	if st != nil {
		cwd = st.cwd
	}
	return tilde(p, cwd).literal()
}

// joinCwd resolves a literal directory against a working directory.
func joinCwd(cwd, target string) string {
	if strings.HasPrefix(target, "/") {
		return path.Clean(target)
	}
	if cwd == "" {
		return ""
	}
	return path.Clean(cwd + "/" + target)
}

// absPat makes a pattern absolute against cwd ("" = unknown) and cleans
// ".", ".." and repeated slashes.
func absPat(p pat, cwd string) pat {
	if len(p) == 0 {
		return p
	}
	if !(p[0].k == 'c' && p[0].c == '/') && p[0].k != 'D' {
		var head pat
		if cwd == "" {
			head = pat{{k: 'D'}}
		} else {
			head = litPat(cwd)
		}
		head = append(head, pelem{k: 'c', c: '/'})
		p = append(head, p...)
	}
	return cleanPat(p)
}

func cleanPat(p pat) pat {
	absolute := len(p) > 0 && p[0].k == 'c' && p[0].c == '/'
	var segs []pat
	cur := pat{}
	for _, e := range p {
		if e.k == 'c' && e.c == '/' {
			segs = append(segs, cur)
			cur = pat{}
			continue
		}
		cur = append(cur, e)
	}
	segs = append(segs, cur)
	var out []pat
	for _, s := range segs {
		lit, ok := s.literal()
		if ok && (lit == "" || lit == ".") {
			continue
		}
		if ok && lit == ".." {
			if n := len(out); n > 0 {
				if out[n-1].hasUnknown() {
					// The parent of an unknown component is unknown.
					out = []pat{{{k: 'D'}}}
					absolute = false
				} else {
					out = out[:n-1]
				}
			}
			continue
		}
		out = append(out, s)
	}
	var r pat
	if absolute {
		r = append(r, pelem{k: 'c', c: '/'})
	}
	for i, s := range out {
		if i > 0 {
			r = append(r, pelem{k: 'c', c: '/'})
		}
		r = append(r, s...)
	}
	if len(r) == 0 && absolute {
		r = litPat("/")
	}
	return r
}

func (p pat) hasUnknown() bool {
	for _, e := range p {
		if e.k == 'D' {
			return true
		}
	}
	return false
}

// matchPat reports whether the pattern can produce s. Glob characters
// follow bash without dotglob: they never match '/', nor a leading '.' of
// a path component; unknowns ('D') match anything.
func matchPat(p pat, s string) bool {
	n, m := len(p), len(s)
	if p.minLen() > m {
		return false
	}
	memo := make([]int8, (n+1)*(m+1))
	var rec func(i, j int) bool
	rec = func(i, j int) bool {
		k := i*(m+1) + j
		if memo[k] != 0 {
			return memo[k] == 1
		}
		res := false
		if i == n {
			res = j == m
		} else {
			e := p[i]
			lead := j < m && s[j] == '.' && (j == 0 || s[j-1] == '/')
			switch e.k {
			case 'c':
				res = j < m && s[j] == e.c && rec(i+1, j+1)
			case '?':
				res = j < m && s[j] != '/' && !lead && rec(i+1, j+1)
			case '[':
				res = j < m && s[j] != '/' && !lead && classMatch(e.set, s[j]) && rec(i+1, j+1)
			case '*':
				res = rec(i+1, j) || (j < m && s[j] != '/' && !lead && rec(i, j+1))
			case 'D':
				res = rec(i+1, j) || (j < m && rec(i, j+1))
			}
		}
		if res {
			memo[k] = 1
		} else {
			memo[k] = 2
		}
		return res
	}
	return rec(0, 0)
}

func classMatch(set string, c byte) bool {
	neg := false
	if set != "" && (set[0] == '!' || set[0] == '^') {
		neg, set = true, set[1:]
	}
	if strings.Contains(set, "[:") {
		// Character classes: assume they match (the cautious answer).
		return true
	}
	in := false
	for i := 0; i < len(set); i++ {
		if i+2 < len(set) && set[i+1] == '-' {
			if set[i] <= c && c <= set[i+2] {
				in = true
			}
			i += 2
			continue
		}
		if set[i] == c {
			in = true
		}
	}
	return in != neg
}

// mayMatch reports whether pattern p may name a path for which pred holds.
// Literal patterns are tested exactly; others against representatives.
func mayMatch(p pat, pred func(string) bool, reps []string) bool {
	if s, ok := p.literal(); ok {
		return pred(s)
	}
	if !p.hasLit() {
		return false
	}
	for _, r := range reps {
		if matchPat(p, r) {
			return true
		}
	}
	return false
}
