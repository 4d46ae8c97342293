package deploy_test

import (
	"strings"
	"testing"
)

// TestSystemdUnit checks that asb.service runs serve as its own user with
// the hardening a network service that holds GitHub credentials needs.
func TestSystemdUnit(t *testing.T) {
	settings := map[string]string{}
	for _, line := range strings.Split(readFile(t, "asb.service"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "[") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("asb.service: %q is not key=value", line)
		}
		settings[k] = v
	}
	for k, want := range map[string]string{
		"ExecStart":               "/opt/asb/asb serve",
		"User":                    "asb",
		"NoNewPrivileges":         "yes",
		"ProtectSystem":           "strict",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"CapabilityBoundingSet":   "",
		"AmbientCapabilities":     "",
		"UMask":                   "0077",
		"StateDirectory":          "asb",
		"StateDirectoryMode":      "0700",
		"Restart":                 "on-failure",
		"EnvironmentFile":         "-/etc/asb/asb.env",
		"RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
	} {
		if got, ok := settings[k]; !ok || got != want {
			t.Errorf("asb.service %s=%q, want %q", k, got, want)
		}
	}
	if env := strings.ToUpper(settings["Environment"]); strings.Contains(env, "TOKEN") || strings.Contains(env, "SECRET") || strings.Contains(env, "KEY") {
		t.Errorf("asb.service Environment=%s puts a secret in the unit, which anyone can read; use the EnvironmentFile", settings["Environment"])
	}
}
