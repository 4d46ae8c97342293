package hook

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// render lists a script's commands as the tests expect them: a simple
// command's words (source text), prefixed by its kind when it is not a
// plain simple command.
func render(sc *script) []string {
	var out []string
	for _, c := range sc.cmds {
		var ws []string
		for _, a := range c.assigns {
			ws = append(ws, a.name+"="+a.value.raw)
		}
		for _, w := range c.args {
			ws = append(ws, w.raw)
		}
		for _, r := range c.redirs {
			if r.doc != nil {
				ws = append(ws, r.op+r.doc.delim)
			} else {
				ws = append(ws, r.fd+r.op+r.target.raw)
			}
		}
		s := strings.Join(ws, " ")
		switch c.kind {
		case cmdData:
			s = "data:" + s
		case cmdArith:
			s = "arith:" + c.arith.text
		case cmdRedirs:
			s = "redirs:" + s
		case cmdTest:
			s = "test:" + s
		}
		out = append(out, s)
	}
	return out
}

func TestParseSplits(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want []string
	}{
		{"a; b && c || d | e & f\ng", []string{"a", "b", "c", "d", "e", "f", "g"}},
		{"echo $(cat x) `y` <(z)", []string{"echo $(cat x) `y` <(z)", "cat x", "y", "z"}},
		{"(cd a && ls); { b; }", []string{"cd a", "ls", "b"}},
		{"if a; then b; elif c; then d; else e; fi", []string{"a", "b", "c", "d", "e"}},
		{"for x in 1 2; do echo $x; done", []string{"data:1 2", "echo $x"}},
		{"for ((i=0; i<3; i++)); do echo $i; done", []string{"arith:i=0; i<3; i++", "echo $i"}},
		{"while read l; do echo; done < f", []string{"read l", "echo", "redirs:<f"}},
		{"case $x in a|b) c;; *) d;; esac", []string{"data:$x", "data:a b", "c", "data:*", "d"}},
		{"f() { g; }; f", []string{"g", "f"}},
		{"function h { i; }", []string{"i"}},
		{"cat <<EOF\n$(id)\nEOF\nls", []string{"cat <<EOF", "ls", "id"}},
		{"cat <<'EOF'\n$(id)\nEOF", []string{"cat <<EOF"}},
		{"cat <<-EOF\n\tx\n\tEOF\nls", []string{"cat <<-EOF", "ls"}},
		{"x=1 y=2 cmd arg", []string{"x=1 y=2 cmd arg"}},
		{`echo "a $(b "c $(d)")"`, []string{`echo "a $(b "c $(d)")"`, `b "c $(d)"`, "d"}},
		{"[[ a && b ]] || c", []string{"test:[[ a && b ]]", "c"}},
		{"((i++)); echo", []string{"arith:i++", "echo"}},
		{"echo ${x:-$(y)}", []string{"echo ${x:-$(y)}", "y"}},
		{"a |& b", []string{"a", "b"}},
		{"! a", []string{"a"}},
		{"time -p a", []string{"a"}},
		{"a 2>&1 >/dev/null", []string{"a 2>&1 >/dev/null"}},
		{"arr=(a b\nc); echo", []string{"arr=", "echo"}},
		{"echo a\\\nb", []string{"echo a\\\nb"}},
		{"# comment only", nil},
		{"echo 'a;b' \"c|d\" e\\;f", []string{`echo 'a;b' "c|d" e\;f`}},
		{"echo $'a\\'b' c", []string{`echo $'a\'b' c`}},
		{"> out", []string{">out"}},
		{"{ a; } > out 2>&1", []string{"a", "redirs:>out 2>&1"}},
		{"until a; do b; done", []string{"a", "b"}},
		{"select x in a b; do c; done", []string{"data:a b", "c"}},
		{"a && \n b", []string{"a", "b"}},
		{"a |\n b", []string{"a", "b"}},
	} {
		sc, err := parseShell(tc.src, "/w")
		if err != nil {
			t.Errorf("%q: %v", tc.src, err)
			continue
		}
		if got := render(sc); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\n got %q\nwant %q", tc.src, got, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{
		"'unterminated", `"unterminated`, "echo $(", "echo `x", "echo ${", "echo ${}", "(a", "a)", "{ a",
		"if a; then b", "for x in a; do b", "case x in a) b", "| a", "a |", "a && ", ";; a", "echo $((1+2)",
		"a <", "[[ a", "f() ", "echo ${x!y}", "$'abc", "a >& ",
	} {
		if _, err := parseShell(src, "/w"); err == nil {
			t.Errorf("%q parsed without error", src)
		}
	}
}

func TestWordValues(t *testing.T) {
	st := &shellState{cwd: "/workspace/app", vars: map[string]*string{}}
	for _, tc := range []struct {
		src  string
		want []string
	}{
		{`a'b'"c"\d`, []string{"abcd"}},
		{"~/x", []string{"/root/x"}},
		{"~root/x", []string{"/root/x"}},
		{"'~/x'", []string{"~/x"}},
		{"$HOME/.npmrc", []string{"/root/.npmrc"}},
		{"${HOME}/x", []string{"/root/x"}},
		{"a{b,c}d", []string{"abd", "acd"}},
		{"{1..3}", []string{"1", "2", "3"}},
		{"{a,b}{1,2}", []string{"a1", "a2", "b1", "b2"}},
		{"'{a,b}'", []string{"{a,b}"}},
		{"{a}", []string{"{a}"}},
		{`$'\x41\101\u00e9'`, []string{"AAé"}},
		{"x*", []string{"x*"}},
		{"$X/y", []string{"*/y"}},
		{"$(pwd)", []string{"*"}},
	} {
		l := &lexer{src: tc.src}
		w, err := l.readWord(false)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		ps, err := expandWord(w, st)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.String())
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.src, got, tc.want)
		}
	}
}

func TestMatchPat(t *testing.T) {
	mk := func(src string) pat {
		l := &lexer{src: src}
		w, _ := l.readWord(false)
		ps, _ := expandWord(w, &shellState{vars: map[string]*string{}})
		return absPat(ps[0], "/workspace/app")
	}
	for _, tc := range []struct {
		pattern, path string
		want          bool
	}{
		{"/root/.n*", "/root/.npmrc", true},
		{"/root/*", "/root/.npmrc", false}, // * skips dot files, as in bash
		{"/root/.*", "/root/.npmrc", true},
		{"/root/?npmrc", "/root/.npmrc", false},
		{"/root/[.]npmrc", "/root/.npmrc", false},
		{"/root/.[n]pmrc", "/root/.npmrc", true},
		{"/root/.[!x]pmrc", "/root/.npmrc", true},
		{"/root/*/id_rsa", "/root/.ssh/id_rsa", false},
		{"/root/.*/id_rsa", "/root/.ssh/id_rsa", true},
		{"$D/id_rsa", "/root/.ssh/id_rsa", true},
		{"/workspace/.agent.*", "/workspace/.agent.runs", true},
		{"/workspace/*/node_modules", "/workspace/.agent.runs", false},
		{"/a/../root/./.npmrc", "/root/.npmrc", true},
		{"../../root/.npmrc", "/root/.npmrc", true},
		{"$D/../.npmrc", "/root/.npmrc", true},
	} {
		p := mk(tc.pattern)
		got := matchPat(p, tc.path)
		if s, ok := p.literal(); ok {
			got = s == tc.path
		}
		if got != tc.want {
			t.Errorf("%q vs %q: %v, want %v (pattern %s)", tc.pattern, tc.path, got, tc.want, p)
		}
	}
}

// Hostile shapes must neither crash the hook nor make it slow: the
// predicates bound nesting, alternatives and command counts, and fail
// closed when a bound is hit.
func TestPathologicalInputs(t *testing.T) {
	big := 1 << 20
	for name, src := range map[string]string{
		"nested $(":        strings.Repeat("$(", 5000) + strings.Repeat(")", 5000),
		"nested ${":        strings.Repeat("${x:-", 5000) + strings.Repeat("}", 5000),
		"nested subshells": strings.Repeat("( ", 5000) + "a" + strings.Repeat(" )", 5000),
		"nested groups":    strings.Repeat("{ ", 5000) + "a;" + strings.Repeat(" }", 5000),
		"nested arith":     "echo $((" + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000) + "))",
		"long word":        "echo " + strings.Repeat("a", big),
		"long escapes":     "echo " + strings.Repeat(`\x`, big/2),
		"many equals":      "cmd " + strings.Repeat("a=", big/2),
		"many braces":      "echo " + strings.Repeat("{a,b}", 2000),
		"brace ranges":     "echo {1..100000}{1..100000}",
		"many commands":    strings.Repeat("a;", 20000),
		"many proc":        "cat " + strings.Repeat("/proc/", big/6),
		"big heredoc":      "cat <<EOF\n" + strings.Repeat("line $x\n", big/8) + "EOF",
		"many pipes":       strings.Repeat("a|", 5000) + "a",
		"many quotes":      strings.Repeat(`"a"'b'`, big/6),
		"glob soup":        "cat " + strings.Repeat("*?[a]", 3000) + "/root/.npmrc",
		"dots":             "cat " + strings.Repeat("/.", big/2),
		"nested bash -c":   strings.Repeat(`bash -c "`, 40) + "ls" + strings.Repeat(`"`, 40),
	} {
		start := time.Now()
		g := Guard(bash(src))
		r := ReadOnly(bash(src))
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("%s: took %v", name, el)
		}
		_ = g
		_ = r
	}
}
