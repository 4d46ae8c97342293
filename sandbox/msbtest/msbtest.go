// Package msbtest builds the fake msb (sandbox/msbfake) for tests and gives
// each test its own msb host: a private MSB_HOME and a small wrapper
// executable that points the fake at it, usable as MSB_PATH locally or
// over SSH (where the caller's environment does not travel).
package msbtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asb-dev/asb/internal/testbin"
)

// Binary returns the fake msb, built once per test process.
func Binary(tb testing.TB) string {
	tb.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		msg := "bwrap is missing (apt-get install bubblewrap): the fake msb isolates boxes with it"
		if os.Getenv("CI") == "" {
			tb.Skip(msg)
		}
		tb.Fatal(msg)
	}
	return testbin.Build(tb, "./sandbox/msbfake", "msb")
}

// Host is one fake msb host.
type Host struct {
	// Path is the wrapper to use as MSB_PATH.
	Path string
	// Home is its MSB_HOME.
	Home string
	bin  string
	// owner, when set, is the user the fake runs as (see GiveTo).
	owner string
}

// New makes a fresh host with the given images already pulled. Its files
// are readable by other users so an SSH test account can use it too.
func New(tb testing.TB, images ...string) *Host {
	tb.Helper()
	bin := Binary(tb)
	dir, err := os.MkdirTemp("", "asb-msbhost-")
	if err != nil {
		tb.Fatal(err)
	}
	h := &Host{Path: filepath.Join(dir, "msb"), Home: filepath.Join(dir, "home"), bin: bin}
	tb.Cleanup(func() {
		// Stop every box this host still runs before removing its files.
		out, _, _ := h.Run("ls", "-q")
		for _, name := range strings.Fields(out) {
			h.Run("rm", "--force", name)
		}
		os.RemoveAll(dir)
	})
	if err := os.MkdirAll(h.Home, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nMSB_HOME='%s'\nexport MSB_HOME\nexec '%s' \"$@\"\n", h.Home, bin)
	if err := os.WriteFile(h.Path, []byte(script), 0o755); err != nil {
		tb.Fatal(err)
	}
	for _, im := range images {
		if _, stderr, code := h.Run("pull", im); code != 0 {
			tb.Fatalf("pull %s: %s", im, stderr)
		}
	}
	return h
}

// GiveTo makes the host's state owned by a user, so that the fake can run
// as that user (an SSH test account).
func (h *Host) GiveTo(tb testing.TB, user string) {
	tb.Helper()
	if out, err := exec.Command("chown", "-R", user, h.Home).CombinedOutput(); err != nil {
		tb.Fatalf("chown %s: %v %s", h.Home, err, out)
	}
	// From now on the test's own calls run as that user too, or the
	// fake's state files would change owner under the SSH account.
	h.owner = user
}

// Run invokes the fake directly, for test set-up and assertions.
func (h *Host) Run(args ...string) (stdout, stderr string, code int) {
	cmd := exec.Command(h.Path, args...)
	if h.owner != "" {
		cmd = exec.Command("runuser", append([]string{"-u", h.owner, "--", h.Path}, args...)...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
		errb.WriteString(err.Error())
	}
	return out.String(), errb.String(), code
}

// Boxes lists the names of the boxes on the host.
func (h *Host) Boxes() []string {
	out, _, _ := h.Run("ls", "-q")
	return strings.Fields(out)
}

// SetKnob writes a failure knob into the host's fake-knobs.env (see the
// msbfake package doc for the names).
func (h *Host) SetKnob(tb testing.TB, line string) {
	tb.Helper()
	f, err := os.OpenFile(filepath.Join(h.Home, "fake-knobs.env"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, line); err != nil {
		tb.Fatal(err)
	}
}
