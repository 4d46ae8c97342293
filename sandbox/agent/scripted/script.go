package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// scriptMarker opens the script in a prompt.
const scriptMarker = "#!asb-script"

// directive is one parsed script line.
type directive struct {
	// Text is the line as written (what the state file keeps).
	Text string
	Verb string
	Arg  string
	// Parsed arguments, per verb.
	Path     string
	Content  string
	Todos    []todo
	Duration time.Duration
	N        int
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// scriptEnd closes the script: surfaces append context to a task (asb's
// GitHub surface adds "---" and the PR or issue it came from), which is
// prose, not directives.
const scriptEnd = "---"

// findScript returns the script lines of a prompt and whether it has one.
func findScript(prompt string) ([]string, bool) {
	lines := strings.Split(prompt, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == scriptMarker {
			script := lines[i+1:]
			for j, s := range script {
				if strings.TrimSpace(s) == scriptEnd {
					return script[:j], true
				}
			}
			return script, true
		}
	}
	return nil, false
}

// parseScript parses script lines, skipping blanks and comments. Errors
// name the line's number within the script (1 = the line after the
// marker).
func parseScript(lines []string) ([]directive, error) {
	var out []directive
	for i, l := range lines {
		l = strings.TrimRight(strings.TrimLeft(l, " \t"), "\r")
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		d, err := parseDirective(l)
		if err != nil {
			return nil, fmt.Errorf("script line %d: %w", i+1, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// parseDirectives re-parses the directive texts kept in a state file.
func parseDirectives(texts []string) ([]directive, error) {
	out := make([]directive, 0, len(texts))
	for _, t := range texts {
		d, err := parseDirective(t)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func parseDirective(line string) (directive, error) {
	verb, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimLeft(arg, " \t")
	d := directive{Text: line, Verb: verb, Arg: arg}
	need := func(what string) error {
		if strings.TrimSpace(arg) == "" {
			return fmt.Errorf("%s: missing %s", verb, what)
		}
		return nil
	}
	switch verb {
	case "say", "commit", "ask":
		if err := need("text"); err != nil {
			return d, err
		}
		d.Content = unescape(arg)
	case "stderr":
		d.Content = unescape(arg)
	case "todo":
		if err := need("items"); err != nil {
			return d, err
		}
		for _, item := range strings.Split(arg, ";") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			d.Todos = append(d.Todos, parseTodo(unescape(item)))
		}
		if len(d.Todos) == 0 {
			return d, fmt.Errorf("todo: no items")
		}
	case "write", "append", "read":
		if err := need("path"); err != nil {
			return d, err
		}
		path, content, _ := strings.Cut(arg, " ")
		d.Path = path
		d.Content = unescape(content)
		if verb == "read" && content != "" {
			return d, fmt.Errorf("read: takes only a path")
		}
	case "run":
		if err := need("command"); err != nil {
			return d, err
		}
		d.Content = arg
	case "env":
		if !envName.MatchString(arg) {
			return d, fmt.Errorf("env: %q is not a variable name", arg)
		}
		d.Content = arg
	case "echo-prompt", "echo-system-prompt", "echo-flags":
		if arg != "" {
			return d, fmt.Errorf("%s: takes no argument", verb)
		}
	case "sleep":
		dur, err := time.ParseDuration(arg)
		if err != nil || dur < 0 {
			return d, fmt.Errorf("sleep: bad duration %q", arg)
		}
		d.Duration = dur
	case "emit":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 0 || n > 1_000_000 {
			return d, fmt.Errorf("emit: bad count %q", arg)
		}
		d.N = n
	case "fail", "crash":
		d.N = 1
		code, msg, _ := strings.Cut(arg, " ")
		if code != "" {
			n, err := strconv.Atoi(code)
			if err != nil || n < 0 || n > 255 {
				return d, fmt.Errorf("%s: bad exit code %q", verb, code)
			}
			d.N = n
		}
		if verb == "crash" && msg != "" {
			return d, fmt.Errorf("crash: takes only an exit code")
		}
		d.Content = unescape(strings.TrimSpace(msg))
	default:
		return d, fmt.Errorf("unknown directive %q", verb)
	}
	return d, nil
}

// todo is one TodoWrite item as Claude Code sends it.
type todo struct {
	Content    string `json:"content"`
	Status     string `json:"status"`
	ActiveForm string `json:"activeForm"`
}

func parseTodo(item string) todo {
	status := "pending"
	for prefix, s := range map[string]string{"[x] ": "completed", "[X] ": "completed", "[>] ": "in_progress", "[~] ": "in_progress", "[ ] ": "pending"} {
		if strings.HasPrefix(item, prefix) {
			status, item = s, strings.TrimSpace(strings.TrimPrefix(item, prefix))
			break
		}
	}
	return todo{Content: item, Status: status, ActiveForm: item}
}

// unescape turns \n, \t and \\ into a newline, a tab and a backslash;
// any other backslash stays as written.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case 'n':
				b.WriteByte('\n')
				i++
				continue
			case 't':
				b.WriteByte('\t')
				i++
				continue
			case '\\':
				b.WriteByte('\\')
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
