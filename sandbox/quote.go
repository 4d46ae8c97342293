package sandbox

import (
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/asb-dev/asb/app"
)

// ShellQuote renders argv as one POSIX shell command line that runs exactly
// argv. SSH has no argv: the exec request carries a string that sshd hands
// to the account's login shell as `$SHELL -c STRING`, so this is the single
// place where asb turns an argv into shell text.
//
// Every element is single-quoted, even when it looks harmless: inside single
// quotes a POSIX shell interprets nothing (no $, `, \, glob, newline or
// comment), so the only character needing care is the quote itself: close
// the quotes, add a backslash-escaped quote, reopen:
//
//	[echo it's $HOME]  ->  'echo' 'it'\''s' '$HOME'
//
// Quoting always also keeps a first word such as A=B from becoming an
// assignment and ~x from expanding.
//
// The remote account's login shell must be a POSIX shell (sh, dash, bash,
// ksh, zsh). csh/tcsh reject newlines inside quotes and fish treats \ inside
// single quotes specially; docs recommend a dedicated account with /bin/sh.
// NUL bytes cannot be represented; Command.validate rejects them first.
func ShellQuote(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(a, "'", `'\''`))
		b.WriteByte('\'')
	}
	return b.String()
}

// envPrelude is the POSIX sh script WithSecretEnv runs. Its stdin starts
// with a line holding N, then N lines of `export K='v'` text written by
// ShellQuote; it evaluates them and execs "$@" with the rest of stdin.
//
// Why this shape:
//   - Values must not appear in any argv: argv is world-readable in ps on
//     the SSH host (and, for `msb exec -e K=V`, on the host and in the box).
//     Stdin is private to the pipeline, and eval/export are shell builtins,
//     so the values live only in the shell's memory and then the exec'd
//     program's environment (/proc/PID/environ is owner-only).
//   - `read` is required by POSIX to consume no more than one line, which
//     shells honour on pipes by reading a byte at a time, so the command
//     receives exactly the stdin that follows the block.
//   - The line count (not a terminator line) delimits the block, because a
//     value may contain any line, including any terminator we could pick.
//   - Values are re-quoted with ShellQuote, so eval only ever sees
//     assignments of literal strings; names are checked against a strict
//     pattern before they reach the block.
//
// Exit status 125 means the block was malformed or cut short.
const envPrelude = `IFS= read -r n || exit 125
case $n in '' | *[!0-9]*) exit 125 ;; esac
s=
while [ "$n" -gt 0 ]; do
IFS= read -r l || exit 125
s="$s$l
"
n=$((n - 1))
done
eval "$s" || exit 125
unset n s l
exec "$@"`

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// WithSecretEnv returns a copy of cmd that runs cmd.Argv with env added to
// its environment, carrying the values on stdin ahead of cmd.Stdin instead
// of in argv. The result runs `sh -c PRELUDE asb-env ARGV...` on the host,
// which works the same through LocalTransport, SSHTransport and, nested,
// `msb exec NAME -- <the returned Argv>` (msb forwards buffered stdin to the
// guest). The command's own stdin is whatever follows the block: cmd.Stdin,
// or empty.
//
// Names must match [A-Za-z_][A-Za-z0-9_]*; values must not contain NUL.
// Errors never include a value.
func WithSecretEnv(cmd Command, env map[string]string) (Command, error) {
	if err := cmd.validate(); err != nil {
		return Command{}, err
	}
	names := make([]string, 0, len(env))
	for k, v := range env {
		if !envName.MatchString(k) {
			return Command{}, app.Errorf(app.EINVALID, "Environment variable name %q is not valid.", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return Command{}, app.Errorf(app.EINVALID, "The value of environment variable %s contains a NUL byte.", k)
		}
		names = append(names, k)
	}
	slices.Sort(names) // deterministic stdin, easier to test and debug
	var block strings.Builder
	for _, k := range names {
		block.WriteString("export ")
		block.WriteString(k)
		block.WriteByte('=')
		block.WriteString(ShellQuote([]string{env[k]}))
		block.WriteByte('\n')
	}
	lines := strings.Count(block.String(), "\n")
	header := strconv.Itoa(lines) + "\n"

	out := cmd
	out.Argv = append([]string{"sh", "-c", envPrelude, "asb-env"}, cmd.Argv...)
	readers := []io.Reader{strings.NewReader(header + block.String())}
	if cmd.Stdin != nil {
		readers = append(readers, cmd.Stdin)
	}
	out.Stdin = io.MultiReader(readers...)
	return out, nil
}
