package sandbox

import (
	"context"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
)

func TestShellQuote(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{nil, ""},
		{[]string{""}, "''"},
		{[]string{"a", ""}, "'a' ''"},
		{[]string{"echo", "it's"}, `'echo' 'it'\''s'`},
		{[]string{"'"}, `''\'''`},
		{[]string{"$(x)", "`y`", "a b", "*", "-n"}, "'$(x)' '`y`' 'a b' '*' '-n'"},
		{[]string{"a\nb"}, "'a\nb'"},
	} {
		if got := ShellQuote(tc.argv); got != tc.want {
			t.Errorf("ShellQuote(%q) = %s, want %s", tc.argv, got, tc.want)
		}
	}
}

// shellRoundTrip runs `sh -c "printf '%s\0' QUOTED"` locally, which is what
// sshd does with the command line, and returns the arguments printf saw.
func shellRoundTrip(t testing.TB, args []string) []string {
	t.Helper()
	line := `printf '%s\0' ` + ShellQuote(args)
	if len(args) == 0 {
		line = "true"
	}
	out, err := exec.Command("sh", "-c", line).Output()
	if err != nil {
		t.Fatalf("sh -c: %v", err)
	}
	if len(out) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// Random byte strings (everything but NUL) survive the shell unchanged.
func TestShellQuoteRandomRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("'\"\\$`;|&<>(){}[]*?~#!= \t\n\r-_./%^aZ9\xc3\xa9\xff")
	var args []string
	for range 300 {
		b := make([]byte, r.IntN(12))
		for j := range b {
			if r.IntN(4) == 0 {
				b[j] = byte(1 + r.IntN(255))
			} else {
				b[j] = alphabet[r.IntN(len(alphabet))]
			}
		}
		args = append(args, string(b))
	}
	got := shellRoundTrip(t, args)
	if len(got) != len(args) {
		t.Fatalf("got %d args, want %d", len(got), len(args))
	}
	for i := range args {
		if got[i] != args[i] {
			t.Errorf("arg %d: got %q, want %q", i, got[i], args[i])
		}
	}
}

func FuzzShellQuote(f *testing.F) {
	for _, s := range hostileArgs("/nonexistent/CANARY") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			t.Skip()
		}
		if got := shellRoundTrip(t, []string{s, "end"}); len(got) != 2 || got[0] != s {
			t.Fatalf("got %q, want %q", got, s)
		}
	})
}

func TestWithSecretEnvValidation(t *testing.T) {
	base := Command{Argv: []string{"env"}}
	for _, env := range []map[string]string{
		{"1BAD": "v"},
		{"BAD-NAME": "v"},
		{"": "v"},
		{"A B": "v"},
		{"A": "sec\x00ret"},
	} {
		_, err := WithSecretEnv(base, env)
		if app.ErrorCode(err) != app.EINVALID {
			t.Errorf("%q: got %v", env, err)
		}
		if strings.Contains(app.ErrorMessage(err), "sec") {
			t.Errorf("message leaks the value: %q", app.ErrorMessage(err))
		}
	}
	if _, err := WithSecretEnv(Command{}, nil); app.ErrorCode(err) != app.EINVALID {
		t.Errorf("empty argv: %v", err)
	}
	cmd, err := WithSecretEnv(base, map[string]string{"TOKEN": "t0ps3cret"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(cmd.Argv, " "), "t0ps3cret") {
		t.Fatal("value in argv")
	}
	res, err := NewLocalTransport(nil).Run(context.Background(), cmd)
	if err != nil || !strings.Contains(string(res.Stdout), "TOKEN=t0ps3cret\n") {
		t.Fatalf("env: %v %s", err, res.Stdout)
	}
}

// A truncated block must not run the command with a partial environment.
func TestSecretEnvPreludeRejectsShortInput(t *testing.T) {
	for _, stdin := range []string{"", "2\nexport A='x'\n", "x\n"} {
		cmd := Command{Argv: []string{"sh", "-c", envPrelude, "asb-env", "echo", "ran"}, Stdin: strings.NewReader(stdin)}
		res, err := NewLocalTransport(nil).Run(context.Background(), cmd)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(res.Stdout), "ran") || res.ExitCode == 0 {
			t.Errorf("stdin %q: exit %d, stdout %q", stdin, res.ExitCode, res.Stdout)
		}
	}
}
