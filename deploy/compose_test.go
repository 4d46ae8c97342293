package deploy_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestComposeFile(t *testing.T) {
	src := readFile(t, "compose.yaml")
	doc, err := parseYAML(src)
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	svc := doc.get("services", "asb")
	if svc == nil {
		t.Fatal("no services.asb")
	}
	if b := svc.get("build"); b.get("context").str() != ".." || b.get("dockerfile").str() != "deploy/Dockerfile" {
		t.Errorf("build %+v: want the repository as context and deploy/Dockerfile", b)
	}
	if r := svc.get("restart").str(); r != "unless-stopped" && r != "always" {
		t.Errorf("restart %q: want unless-stopped or always", r)
	}
	if e := svc.get("env_file").str(); e != ".env" {
		t.Errorf("env_file %q: want .env", e)
	}

	// Inside the container: every interface, state in the volume, SSH files
	// from the read-only mount. These must win over a host install's .env.
	env := svc.get("environment")
	if env.get("ASB_ADDR").str() != "0.0.0.0:8787" || env.get("ASB_DATA_DIR").str() != "/data" {
		t.Errorf("environment: ASB_ADDR=%q ASB_DATA_DIR=%q", env.get("ASB_ADDR").str(), env.get("ASB_DATA_DIR").str())
	}
	secretName := regexp.MustCompile(`(?i)(TOKEN|SECRET|PASSWORD|API_KEY|SECRETS_KEY)`)
	for _, k := range env.keys {
		if secretName.MatchString(k) {
			t.Errorf("environment sets %s in compose.yaml: secrets belong in .env", k)
		}
	}

	vols := svc.get("volumes").strings()
	var dataVolume, sshMount string
	for _, v := range vols {
		parts := strings.Split(v, ":")
		switch {
		case len(parts) >= 2 && parts[1] == "/data":
			dataVolume = parts[0]
		case len(parts) == 3 && strings.Contains(parts[0], "ssh"):
			if parts[2] != "ro" {
				t.Errorf("volume %s: the SSH key must be mounted read-only", v)
			}
			sshMount = parts[1]
		}
	}
	if dataVolume == "" || strings.ContainsAny(dataVolume, "./") || doc.get("volumes", dataVolume) == nil {
		t.Errorf("volumes %v: want a named volume (declared at the top level) on /data", vols)
	}
	if sshMount == "" {
		t.Fatalf("volumes %v: no read-only SSH mount", vols)
	}
	for _, k := range []string{"SSH_KEY_FILE", "SSH_KNOWN_HOSTS"} {
		if p := env.get(k).str(); !strings.HasPrefix(p, sshMount+"/") {
			t.Errorf("%s=%q is not in the SSH mount %s", k, p, sshMount)
		}
	}

	ports := svc.get("ports").strings()
	if len(ports) == 0 {
		t.Error("no published port")
	}
	for _, p := range ports {
		if !strings.HasPrefix(p, "127.0.0.1:") {
			t.Errorf("port %q is published on every interface: bind it to 127.0.0.1 behind a TLS proxy", p)
		}
	}
	if !strings.Contains(src, "reverse proxy") || !strings.Contains(src, "TLS") {
		t.Error("compose.yaml does not say to put a TLS reverse proxy in front")
	}

	hc := svc.get("healthcheck")
	if test := hc.get("test").str(); !strings.Contains(test, `"/opt/asb/asb", "healthcheck"`) {
		t.Errorf("healthcheck test %q: want the binary's healthcheck command", test)
	}
	for _, k := range []string{"interval", "timeout", "retries"} {
		if hc.get(k).str() == "" {
			t.Errorf("healthcheck has no %s", k)
		}
	}
	if caps := svc.get("cap_drop").strings(); !slices.Contains(caps, "ALL") {
		t.Errorf("cap_drop %v: want ALL", caps)
	}
}

func TestParseYAMLSubset(t *testing.T) {
	doc, err := parseYAML("a:\n  b: \"x:y\" # note\n  l:\n  - one\n  - 'two'\n  c: 3\nd: [\"e\", \"f\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	l := doc.get("a", "l").strings()
	if doc.get("a", "b").str() != "x:y" || len(l) != 2 || l[1] != "two" || doc.get("a", "c").str() != "3" || doc.get("d").str() != `["e", "f"]` {
		t.Fatalf("parsed %+v", doc)
	}
	for _, bad := range []string{"a:\n\tb: 1\n", "a: 1\na: 2\n", "a:\n    b: 1\n  c: 2\n", "- x\ny: 1\n"} {
		if _, err := parseYAML(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
