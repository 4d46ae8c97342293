package main

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want options
	}{
		{
			name: "the launcher's command line",
			args: []string{"-p", "do it", "--output-format", "stream-json", "--verbose", "--setting-sources", "user",
				"--append-system-prompt", "POLICY", "--allowedTools", "Bash", "Edit", "Write", "Read", "Glob", "Grep"},
			want: options{Print: true, Prompt: "do it", OutputFormat: "stream-json", Verbose: true, SettingSources: []string{"user"},
				AppendSystemPrompt: "POLICY", AllowedTools: []string{"Bash", "Edit", "Write", "Read", "Glob", "Grep"}, PermissionMode: "default"},
		},
		{
			name: "resume, inline values, rule lists",
			args: []string{"--print", "--resume=abc", "--model", "m", `--allowedTools=Bash(git commit:*) Edit,Write`, "--disallowed-tools", "WebFetch", "--", "-prompt-"},
			want: options{Print: true, Prompt: "-prompt-", OutputFormat: "text", Resume: "abc", Model: "m",
				AllowedTools: []string{"Bash(git commit:*)", "Edit", "Write"}, DisallowedTools: []string{"WebFetch"},
				SettingSources: []string{"user", "project", "local"}, PermissionMode: "default"},
		},
		{
			name: "unknown flags, switches and extra arguments",
			args: []string{"--max-turns", "5", "--frobnicate", "x", "--wat=1", "-Z", "prompt", "extra", "-c", "--dangerously-skip-permissions", "--setting-sources", "user,project"},
			want: options{Prompt: "prompt", OutputFormat: "text", Continue: true, SettingSources: []string{"user", "project"},
				PermissionMode: "bypassPermissions", Ignored: []string{"--max-turns", "--frobnicate", "--wat", "-Z"}},
		},
		{
			name: "prompt after a list flag is swallowed, as in Claude Code",
			args: []string{"--allowedTools", "Bash", "Write", "-p"},
			want: options{Print: true, OutputFormat: "text", AllowedTools: []string{"Bash", "Write"},
				SettingSources: []string{"user", "project", "local"}, PermissionMode: "default"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseArgs(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if _, err := parseArgs([]string{"-p", "x", "--resume"}); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("missing value: %v", err)
	}
}

func TestParseScript(t *testing.T) {
	lines, ok := findScript("task text\n  #!asb-script  \nsay a\\nb\\\\n\n\n# comment\n\t todo [x] done; [>] doing ;plain;; [ ] later\r\nwrite dir/f.txt  two  spaces\\t\nwrite empty\nsleep 250ms\nemit 3\nfail\nfail 7 it broke\ncrash 3\nenv MY_VAR\n")
	if !ok {
		t.Fatal("no script found")
	}
	dirs, err := parseScript(lines)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range dirs {
		got = append(got, d.Verb)
	}
	if want := []string{"say", "todo", "write", "write", "sleep", "emit", "fail", "fail", "crash", "env"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("verbs %v", got)
	}
	if dirs[0].Content != "a\nb\\n" {
		t.Errorf("say: %q", dirs[0].Content)
	}
	wantTodos := []todo{{"done", "completed", "done"}, {"doing", "in_progress", "doing"}, {"plain", "pending", "plain"}, {"later", "pending", "later"}}
	if !reflect.DeepEqual(dirs[1].Todos, wantTodos) {
		t.Errorf("todos: %+v", dirs[1].Todos)
	}
	if dirs[2].Path != "dir/f.txt" || dirs[2].Content != " two  spaces\t" || dirs[3].Path != "empty" || dirs[3].Content != "" {
		t.Errorf("write: %+v %+v", dirs[2], dirs[3])
	}
	if dirs[4].Duration != 250*time.Millisecond || dirs[5].N != 3 {
		t.Errorf("sleep/emit: %+v %+v", dirs[4], dirs[5])
	}
	if dirs[6].N != 1 || dirs[6].Content != "" || dirs[7].N != 7 || dirs[7].Content != "it broke" || dirs[8].N != 3 {
		t.Errorf("fail/crash: %+v %+v %+v", dirs[6], dirs[7], dirs[8])
	}
	if dirs[1].Text != "todo [x] done; [>] doing ;plain;; [ ] later" {
		t.Errorf("text kept for the state file: %q", dirs[1].Text)
	}

	if _, ok := findScript("no script here\nsay hi"); ok {
		t.Error("found a script without the marker")
	}
	for _, bad := range []string{"bogus", "say", "say   ", "todo ;;", "write", "read a b", "run", "env 1X", "env A-B",
		"echo-prompt x", "sleep soon", "sleep -1s", "emit x", "emit -1", "fail 256", "fail x", "crash 1 why", "ask"} {
		if _, err := parseScript([]string{"say ok", bad}); err == nil || !strings.Contains(err.Error(), "script line 2") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestRuleMatches(t *testing.T) {
	tr := &turn{cwd: "/w"}
	tests := []struct {
		rule, tool string
		in         map[string]any
		want       bool
	}{
		{"Bash", "Bash", map[string]any{"command": "ls"}, true},
		{"Bash(*)", "Bash", map[string]any{"command": "ls"}, true},
		{"Bash(git commit:*)", "Bash", map[string]any{"command": "git commit -m x"}, true},
		{"Bash(git commit:*)", "Bash", map[string]any{"command": "git push"}, false},
		{"Bash(make)", "Bash", map[string]any{"command": "make"}, true},
		{"Bash(make)", "Bash", map[string]any{"command": "make all"}, false},
		{"Write", "Bash", map[string]any{"command": "ls"}, false},
		{"Edit", "Write", map[string]any{"file_path": "/w/a"}, true},
		{"Write(src/**)", "Write", map[string]any{"file_path": "/w/src/x/y.go"}, true},
		{"Write(src/**)", "Write", map[string]any{"file_path": "/w/doc/y.md"}, false},
		{"Edit(*.md)", "Write", map[string]any{"file_path": "/w/README.md"}, true},
		{"Write(/etc/*)", "Write", map[string]any{"file_path": "/etc/passwd"}, true},
	}
	for _, tc := range tests {
		if got := tr.ruleMatches(tc.rule, tc.tool, tc.in); got != tc.want {
			t.Errorf("%s on %s %v: %v", tc.rule, tc.tool, tc.in, got)
		}
	}
}

func TestSubcommands(t *testing.T) {
	for cmd, want := range map[string][]string{
		"git add -A && git commit -m 'a && b; c'": {"git add -A", "git commit -m 'a && b; c'"},
		"a || b | c; d\ne & f":                    {"a", "b", "c", "d", "e & f"},
		`echo "x \" ; y" ; z`:                     {`echo "x \" ; y"`, "z"},
		"":                                        {""},
	} {
		if got := subcommands(cmd); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %q", cmd, got)
		}
	}
	tr := &turn{o: options{AllowedTools: []string{"Bash(git add:*)", "Bash(git commit:*)"}}}
	if !tr.permitted("Bash", map[string]any{"command": "git add -A && git commit -m x"}) ||
		tr.permitted("Bash", map[string]any{"command": "git add -A && rm -rf /"}) {
		t.Error("compound command permissions")
	}
	tr = &turn{o: options{AllowedTools: []string{"Bash"}, DisallowedTools: []string{"Bash(rm:*)"}}}
	if !tr.permitted("Bash", map[string]any{"command": "ls"}) || tr.permitted("Bash", map[string]any{"command": "ls; rm -rf x"}) {
		t.Error("deny rules on a subcommand")
	}
}

func TestMatcher(t *testing.T) {
	for _, tc := range []struct {
		m, tool string
		want    bool
	}{{"", "Bash", true}, {"*", "Write", true}, {"Bash", "Bash", true}, {"Bash", "BashOutput", false},
		{"Edit|Write", "Write", true}, {"Notebook.*", "NotebookEdit", true}, {"(", "(", true}, {"(", "Bash", false}} {
		if got := matcherMatches(tc.m, tc.tool); got != tc.want {
			t.Errorf("%q %q: %v", tc.m, tc.tool, got)
		}
	}
}

func TestUnescapeAndQuote(t *testing.T) {
	if got := unescape(`a\nb\tc\\d\qe\`); got != "a\nb\tc\\d\\qe\\" {
		t.Errorf("unescape: %q", got)
	}
	if got := shellQuote("it's"); got != `'it'\''s'` {
		t.Errorf("quote: %s", got)
	}
}

func TestScriptEndsAtContextSeparator(t *testing.T) {
	lines, ok := findScript("ask\n#!asb-script\nsay a\n---\nGitHub pull request acme/api#7\nRequested by octo.")
	if !ok || len(lines) != 1 || lines[0] != "say a" {
		t.Fatalf("lines = %q, %v", lines, ok)
	}
}
