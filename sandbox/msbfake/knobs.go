package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Knob names (documented in the package comment).
const (
	knobNow          = "FAKE_MSB_NOW"
	knobClockOffset  = "FAKE_MSB_CLOCK_OFFSET"
	knobBootFail     = "FAKE_MSB_BOOT_FAIL"
	knobCrash        = "FAKE_MSB_CRASH"
	knobUnreachable  = "FAKE_MSB_UNREACHABLE_IMAGES"
	knobExecDelay    = "FAKE_MSB_EXEC_DELAY"
	knobDoctorFail   = "FAKE_MSB_DOCTOR_FAIL"
	knobsFileName    = "fake-knobs.env"
	defaultHomeLeaf  = ".microsandbox"
	stateFileName    = "fake-state.json"
	stateLockName    = "fake-state.lock"
	sandboxesDirName = "sandboxes"
)

// knobs holds the test knobs of one invocation.
type knobs struct {
	values map[string]string
}

// loadKnobs merges $MSB_HOME/fake-knobs.env with the environment (the
// environment wins) so tests can steer a fake reached over SSH.
func loadKnobs(home string) (*knobs, error) {
	k := &knobs{values: map[string]string{}}
	if err := k.readFile(filepath.Join(home, knobsFileName)); err != nil {
		return nil, err
	}
	for _, name := range []string{knobNow, knobClockOffset, knobBootFail, knobCrash, knobUnreachable, knobExecDelay, knobDoctorFail} {
		if v, ok := os.LookupEnv(name); ok {
			k.values[name] = v
		}
	}
	return k, nil
}

func (k *knobs) readFile(p string) error {
	f, err := os.Open(p)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if ok {
			k.values[strings.TrimSpace(key)] = strings.TrimSpace(val)
		}
	}
	return sc.Err()
}

func (k *knobs) get(name string) string { return k.values[name] }

// now is the fake clock: FAKE_MSB_NOW (or the wall clock) plus
// FAKE_MSB_CLOCK_OFFSET, in UTC and truncated to microseconds like the
// timestamps msb stores in SQLite.
func (k *knobs) now() (time.Time, error) {
	t := time.Now()
	if v := k.get(knobNow); v != "" {
		p, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s: %w", knobNow, err)
		}
		t = p
	}
	if v := k.get(knobClockOffset); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s: %w", knobClockOffset, err)
		}
		t = t.Add(d)
	}
	return t.UTC().Truncate(time.Microsecond), nil
}

// execDelay is the artificial latency added before every guest command.
func (k *knobs) execDelay() (time.Duration, error) {
	v := k.get(knobExecDelay)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", knobExecDelay, err)
	}
	return d, nil
}

// matches reports whether any glob of the comma-separated knob matches one of
// the candidates.
func (k *knobs) matches(name string, candidates ...string) bool {
	for _, pat := range strings.Split(k.get(name), ",") {
		pat = strings.TrimSpace(pat)
		if pat == "" {
			continue
		}
		for _, c := range candidates {
			if globMatch(pat, c) {
				return true
			}
		}
	}
	return false
}

// globMatch matches s against a pattern where `*` stands for any run of
// characters (slashes included, so `ghcr.io/*` matches whole references) and
// `?` for one character.
func globMatch(pat, s string) bool {
	if pat == "" {
		return s == ""
	}
	switch pat[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if globMatch(pat[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && globMatch(pat[1:], s[1:])
	}
	return s != "" && s[0] == pat[0] && globMatch(pat[1:], s[1:])
}

func (k *knobs) enabled(name string) bool {
	v := strings.TrimSpace(k.get(name))
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

// msbHome resolves $MSB_HOME (default ~/.microsandbox).
func msbHome() (string, error) {
	if h := os.Getenv("MSB_HOME"); h != "" {
		return filepath.Abs(h)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = homeFromPasswd()
		if home == "" {
			return "", fmt.Errorf("cannot determine home directory: %w", err)
		}
	}
	return filepath.Join(home, defaultHomeLeaf), nil
}

// homeFromPasswd finds the caller's home in /etc/passwd when $HOME is unset
// (some SSH setups), without cgo.
func homeFromPasswd() string {
	data, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return ""
	}
	uid := fmt.Sprint(os.Getuid())
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 6 && f[2] == uid {
			return f[5]
		}
	}
	return ""
}
