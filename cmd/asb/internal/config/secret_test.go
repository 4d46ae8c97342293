package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

const leak = "s3cr3t-LEAK-canary-0123456789"

func TestSecretNeverPrints(t *testing.T) {
	s := Secret(leak)
	if s.Reveal() != leak || !s.IsSet() {
		t.Fatal("Reveal/IsSet broken")
	}
	type wrapper struct {
		Tok Secret
		Ptr *Secret
	}
	w := wrapper{Tok: s, Ptr: &s}
	outputs := map[string]string{
		"Sprint":   fmt.Sprint(s),
		"%v":       fmt.Sprintf("%v", s),
		"%s":       fmt.Sprintf("%s", s),
		"%q":       fmt.Sprintf("%q", s),
		"%x":       fmt.Sprintf("%x", s),
		"%X":       fmt.Sprintf("%X", s),
		"%d":       fmt.Sprintf("%d", s), // a bad verb must not print the raw value either
		"%+v":      fmt.Sprintf("%+v", w),
		"%#v":      fmt.Sprintf("%#v", w),
		"%#v self": fmt.Sprintf("%#v", s),
		"slice":    fmt.Sprint([]Secret{s}),
		"map":      fmt.Sprint(map[string]Secret{"k": s}),
	}
	j, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	outputs["json"] = string(j)
	for _, h := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var buf bytes.Buffer
		log := slog.New(h(&buf))
		log.Info("x", "tok", s, "struct", w, slog.Any("any", s), slog.Group("g", "tok", s))
		outputs[fmt.Sprintf("slog %T", h(&buf))] = buf.String()
	}
	for name, out := range outputs {
		if strings.Contains(out, leak) {
			t.Errorf("%s leaked the secret: %s", name, out)
		}
		if !strings.Contains(out, redacted) {
			t.Errorf("%s does not show %q: %s", name, redacted, out)
		}
	}
}

func TestSecretUnsetPrintsEmpty(t *testing.T) {
	var s Secret
	if s.IsSet() || s.String() != "" || fmt.Sprint(s) != "" {
		t.Errorf("unset secret prints %q", fmt.Sprint(s))
	}
	if got := fmt.Sprintf("%#v", s); got != `config.Secret("")` {
		t.Errorf("%%#v = %s", got)
	}
}

// Every secret in a loaded Config stays hidden in dumps and in errors.
func TestConfigDumpsAndErrorsHideSecrets(t *testing.T) {
	env := []string{
		"MCP_HTTP_TOKEN=" + leak,
		"SECRETS_KEY=" + strings.Repeat("ab", 32),
		"ANTHROPIC_API_KEY=" + leak,
		"NPM_TOKEN=" + leak,
		"GITHUB_WEBHOOK_SECRET=" + leak,
		"GITHUB_OAUTH_CLIENT_ID=Iv1.abc",
		"GITHUB_OAUTH_CLIENT_SECRET=" + leak,
	}
	c, err := Load(env, "")
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(c)
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("cfg", "c", c)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("cfg", "c", c)
	for name, out := range map[string]string{
		"%v": fmt.Sprintf("%v", c), "%+v": fmt.Sprintf("%+v", c), "%#v": fmt.Sprintf("%#v", c),
		"json": string(j), "slog": buf.String(), "unconfigured": strings.Join(c.Unconfigured(), "\n"),
	} {
		if strings.Contains(out, leak) || strings.Contains(out, strings.Repeat("ab", 32)) {
			t.Errorf("%s leaked a secret: %s", name, out)
		}
	}

	// Bad secrets: the error names the variable but never the value.
	bad := []string{
		"MCP_HTTP_TOKEN=short" + "\x01" + leak,
		"MCP_HTTP_TOKEN=tiny",
		"SECRETS_KEY=" + leak,
		"ANTHROPIC_API_KEY=" + leak + " with space",
		"NPM_TOKEN=" + leak + "\tx",
		"GITHUB_WEBHOOK_SECRET=a b" + leak,
		"GITHUB_OAUTH_CLIENT_SECRET=" + leak + " x",
		"ANTHROPIC_BASE_URL=https://user:" + leak + "@proxy.example.com",
		"BILLING_URL=https://user:" + leak + "@billing.example.com",
		"SANDBOX_HOSTS=ssh://root:" + leak + "@h.example.com",
		"VPS_SSH=root:" + leak + "@h.example.com",
	}
	for _, kv := range bad {
		name, _, _ := strings.Cut(kv, "=")
		_, err := Load([]string{kv}, "")
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if strings.Contains(err.Error(), leak) || strings.Contains(err.Error(), "tiny") {
			t.Errorf("%s: error leaks the value: %v", name, err)
		}
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error does not name the variable: %v", name, err)
		}
		var ve *VarError
		if !errors.As(err, &ve) || strings.Contains(ve.Value, leak) {
			t.Errorf("%s: VarError carries the value: %#v", name, ve)
		}
	}
}
