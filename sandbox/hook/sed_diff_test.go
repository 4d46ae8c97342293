package hook

import (
	"bytes"
	"math/rand"
	"os/exec"
	"strings"
	"testing"
)

// TestSedCheckerAgainstGNUSed generates sed scripts from tricky fragments
// and checks every script the ro lane would accept against GNU sed's own
// --sandbox mode, which rejects the e, r and w commands. If the checker
// and sed ever read a script differently in a way that hides a w, this
// finds it.
func TestSedCheckerAgainstGNUSed(t *testing.T) {
	sed, err := exec.LookPath("sed")
	if err != nil {
		t.Skip("no sed")
	}
	if out, _ := exec.Command(sed, "--version").Output(); !bytes.Contains(out, []byte("GNU sed")) {
		t.Skip("not GNU sed")
	}
	frags := []string{
		"s/a/b/", "s/[/]/x/", "s|x|y|", "s/a/b/w f", "w f", "p", "d", ";", "\n", "/x/", "/[/]/", "1,2", "$", "!",
		"{", "}", "s/a/b/e", "e", "r f", "y/a/b/", "s/\\//x/", "[", "]", "/", "\\", "w", "g", "s", "#c\n", ":l\n",
		"b l\n", "a\\\nt\n", "i x\n", "N", "s/x/y/gp", "s/[[:alpha:]/]/x/", "s/a/]/", " ", "q", "0~2", "\\,x,",
	}
	rng := rand.New(rand.NewSource(1))
	checked := 0
	for n := 0; n < 3000 && checked < 1200; n++ {
		var b strings.Builder
		for k := rng.Intn(5) + 1; k > 0; k-- {
			b.WriteString(frags[rng.Intn(len(frags))])
		}
		script := b.String()
		if sedScriptReason(script) != "" {
			continue
		}
		checked++
		cmd := exec.Command(sed, "--sandbox", "-n", "-e", script)
		cmd.Stdin = strings.NewReader("")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		_ = cmd.Run()
		if strings.Contains(stderr.String(), "sandbox") {
			t.Errorf("ro accepts sed script %q, but GNU sed sees e/r/w in it", script)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d accepted scripts were checked", checked)
	}
}
