package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/asb-dev/asb/github/githubtest"
	"github.com/asb-dev/asb/sandbox/sshtest"
)

// doctorCheck is one check's lines in doctor's output.
type doctorCheck struct {
	level, what, why, fix string
}

func parseDoctor(out string) []doctorCheck {
	var checks []doctorCheck
	field := ""
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "  ") && len(line) > 8 && line[2] != ' ':
			checks = append(checks, doctorCheck{level: strings.TrimSpace(line[2:6]), what: line[8:]})
			field = "what"
		case len(checks) == 0:
		case strings.HasPrefix(line, "        why: "):
			checks[len(checks)-1].why, field = strings.TrimPrefix(line, "        why: "), "why"
		case strings.HasPrefix(line, "        fix: "):
			checks[len(checks)-1].fix, field = strings.TrimPrefix(line, "        fix: "), "fix"
		case strings.HasPrefix(line, "             "):
			c := &checks[len(checks)-1]
			more := " " + strings.TrimSpace(line)
			switch field {
			case "what":
				c.what += more
			case "why":
				c.why += more
			case "fix":
				c.fix += more
			}
		}
	}
	return checks
}

// runDoctorWith runs doctor and checks what every report must have: a why
// and a fix for each failure and warning, and no secret.
func runDoctorWith(t *testing.T, data string, env ...string) (int, []doctorCheck, string) {
	t.Helper()
	e, out, _ := testEnv(t, data, env...)
	code := run(context.Background(), e, []string{"doctor", "--timeout", "10s"})
	checks := parseDoctor(out.String())
	for _, c := range checks {
		if (c.level == "FAIL" || c.level == "warn") && (c.why == "" || c.fix == "") {
			t.Errorf("%s %q has no why or no fix:\n%s", c.level, c.what, out)
		}
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if (strings.Contains(k, "SECRET") || strings.Contains(k, "TOKEN")) && strings.Contains(out.String(), v) {
			t.Errorf("doctor printed %s", k)
		}
	}
	return code, checks, out.String()
}

// findCheck returns the check at level whose line mentions what.
func findCheck(checks []doctorCheck, level, what string) (doctorCheck, bool) {
	for _, c := range checks {
		if c.level == level && strings.Contains(c.what, what) {
			return c, true
		}
	}
	return doctorCheck{}, false
}

func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// sealedDataDir is a data folder whose database holds a secret sealed with
// its secrets.key, as after a first asb serve.
func sealedDataDir(t *testing.T) string {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	e, _, _ := testEnv(t, data)
	cfg, err := loadConfig(e)
	if err != nil {
		t.Fatal(err)
	}
	store, err := openStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, _, created, err := openKeyring(context.Background(), cfg, store, true); err != nil || !created {
		t.Fatalf("keyring: created %v, %v", created, err)
	}
	return data
}

func TestDoctorExplainsLocalProblems(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notADir, []byte("x"), 0o600)

	brokenDB := t.TempDir()
	os.WriteFile(filepath.Join(brokenDB, "asb.sqlite"), []byte(strings.Repeat("not a database ", 100)), 0o600)

	badToken := t.TempDir()
	os.WriteFile(filepath.Join(badToken, "operator.token"), []byte("short\n"), 0o600)

	lostKey := sealedDataDir(t)
	os.Remove(filepath.Join(lostKey, "secrets.key"))

	openKey := sealedDataDir(t)
	os.Chmod(filepath.Join(openKey, "secrets.key"), 0o644)

	sshKey := sshtest.NewKey(t, filepath.Join(t.TempDir(), "id_ed25519")).File

	for _, tc := range []struct {
		name      string
		data      string
		env       []string
		level     string
		what      string
		why, fix  string
		wantsExit int
	}{
		{"data folder cannot be created", filepath.Join(notADir, "data"), nil,
			"FAIL", "cannot be created", "cannot start without it", "or set ASB_DATA_DIR", 1},
		{"damaged database", brokenDB, nil,
			"FAIL", "database " + filepath.Join(brokenDB, "asb.sqlite") + " cannot be opened", "asb serve refuses to start", "restore it from a backup", 1},
		{"another secrets key", sealedDataDir(t), []string{"SECRETS_KEY=" + strings.Repeat("cd", 32)},
			"FAIL", "does not open this database's secrets", "cannot be decrypted", "backed up together with this database", 1},
		{"lost secrets key", lostKey, nil,
			"FAIL", "is missing, but the database holds secrets sealed with it", "make a new key that cannot open them", "restore " + filepath.Join(lostKey, "secrets.key"), 1},
		{"secrets key readable by others", openKey, nil,
			"FAIL", "is readable by other users", "decrypt the stored GitHub tokens", "chmod 600 " + filepath.Join(openKey, "secrets.key"), 1},
		{"unusable operator token file", badToken, nil,
			"FAIL", "holds no usable token", "refuses to start", "delete " + filepath.Join(badToken, "operator.token"), 1},
		{"no sandbox host", t.TempDir(), nil,
			"FAIL", "no sandbox host configured", "no run can start", "SANDBOX_HOSTS=ssh://user@host", 1},
		{"SSH key missing", t.TempDir(), []string{"SANDBOX_HOSTS=ssh://asb@127.0.0.1:22", "SSH_KEY_FILE=" + filepath.Join(t.TempDir(), "absent")},
			"FAIL", "cannot be read", "cannot log in", "set SSH_KEY_FILE", 1},
		{"SSH host down", t.TempDir(), []string{"SANDBOX_HOSTS=ssh://asb@" + closedPort(t), "SSH_KEY_FILE=" + sshKey, "SSH_KNOWN_HOSTS=" + filepath.Join(t.TempDir(), "kh")},
			"FAIL", "Cannot reach SSH host", "asb keeps probing it", "ssh -i " + sshKey, 1},
		{"no model credentials", t.TempDir(), nil,
			"warn", "no model credentials", "every run fails", "ANTHROPIC_API_KEY", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, checks, out := runDoctorWith(t, tc.data, tc.env...)
			c, ok := findCheck(checks, tc.level, tc.what)
			if !ok {
				t.Fatalf("no %s check about %q:\n%s", tc.level, tc.what, out)
			}
			if !strings.Contains(c.why, tc.why) || !strings.Contains(c.fix, tc.fix) {
				t.Errorf("%s %s: why %q fix %q; want %q and %q", tc.level, c.what, c.why, c.fix, tc.why, tc.fix)
			}
			if code != tc.wantsExit {
				t.Errorf("exit %d", code)
			}
		})
	}
}

func writeRSAKey(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "other.pem")
	os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}), 0o600)
	return f
}

func TestDoctorChecksTheGitHubApp(t *testing.T) {
	srv := githubtest.New(t, githubtest.Options{})
	goodKey := filepath.Join(t.TempDir(), "app.pem")
	os.WriteFile(goodKey, srv.AppPrivateKeyPEM(), 0o600)
	notPEM := filepath.Join(t.TempDir(), "app.pem")
	os.WriteFile(notPEM, []byte("-----BEGIN NOTHING-----\n"), 0o600)
	id := "GITHUB_APP_ID=" + strconv.FormatInt(srv.AppID(), 10)
	api := "GITHUB_API_URL=" + srv.APIURL()
	web := "GITHUB_WEB_URL=" + srv.URL + "/"
	const secret = "GITHUB_WEBHOOK_SECRET=doctor-test-webhook-secret"

	type want struct{ level, what, why, fix string }
	steps := []struct {
		name    string
		install bool // install the App on an account before this step
		env     []string
		want    []want
	}{
		{"no App", false, nil, []want{{"warn", "no GitHub App configured", "does not see /agent comments", "GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY_FILE"}}},
		{"key file missing", false, []string{id, "GITHUB_APP_PRIVATE_KEY_FILE=" + filepath.Join(t.TempDir(), "absent.pem"), api, web},
			[]want{{"FAIL", "cannot be read (no such file or directory)", "neither sees comments nor clones", "GITHUB_APP_PRIVATE_KEY_FILE to the .pem"}}},
		{"not a key", false, []string{id, "GITHUB_APP_PRIVATE_KEY_FILE=" + notPEM, api, web},
			[]want{{"FAIL", "is not a usable private key", "cannot act as the App", "download a new private key"}}},
		{"another App's key", false, []string{id, "GITHUB_APP_PRIVATE_KEY_FILE=" + writeRSAKey(t), api, web},
			[]want{{"FAIL", "GitHub refused the App's credentials", "belong to different Apps", "check the App ID"}}},
		{"GitHub unreachable", false, []string{id, "GITHUB_APP_PRIVATE_KEY_FILE=" + goodKey, "GITHUB_API_URL=http://" + closedPort(t) + "/api/v3/", web},
			[]want{{"FAIL", "could not be reached", "cannot act as the App", "check that this machine reaches http://"}}},
		{"not installed", false, []string{id, "GITHUB_APP_PRIVATE_KEY_FILE=" + goodKey, api, web, secret, "ASB_PUBLIC_URL=https://asb.example.com"},
			[]want{{"ok", "GitHub App", "", ""}, {"warn", "is not installed on any account", "only sees and works in repositories where the App is installed", srv.URL + "/apps/asb-test/installations/new"}}},
		{"webhook to loopback", true, []string{id, "GITHUB_APP_PRIVATE_KEY_FILE=" + goodKey, api, web, secret},
			[]want{{"ok", "installed on acme", "", ""}, {"warn", "which GitHub cannot reach", "never arrive", "ASB_PUBLIC_URL=https://"}}},
		{"nothing delivers events", true, []string{id, "GITHUB_APP_PRIVATE_KEY_FILE=" + goodKey, api, web, "POLL_INTERVAL=off"},
			[]want{{"FAIL", "no GITHUB_WEBHOOK_SECRET and POLL_INTERVAL is off", "never sees /agent comments", "POLL_INTERVAL=60s"}}},
		{"poll-only mode", true, []string{id, "GITHUB_APP_PRIVATE_KEY_FILE=" + goodKey, api, web},
			[]want{{"note", "poll-only mode", "", ""}}},
		{"webhook on", true, []string{id, "GITHUB_APP_PRIVATE_KEY_FILE=" + goodKey, api, web, secret, "ASB_PUBLIC_URL=https://asb.example.com"},
			[]want{{"ok", "webhook receiver on; the App's webhook URL must be https://asb.example.com/webhooks/github", "", ""}}},
	}
	installed := false
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.install && !installed {
				srv.AddInstallation("acme")
				installed = true
			}
			_, checks, out := runDoctorWith(t, t.TempDir(), st.env...)
			for _, w := range st.want {
				c, ok := findCheck(checks, w.level, w.what)
				if !ok {
					t.Fatalf("no %s check about %q:\n%s", w.level, w.what, out)
				}
				if !strings.Contains(c.why, w.why) || !strings.Contains(c.fix, w.fix) {
					t.Errorf("%s %s: why %q fix %q; want %q and %q", w.level, c.what, c.why, c.fix, w.why, w.fix)
				}
			}
		})
	}
}
