package main

import (
	"context"
	"strings"
	"testing"
)

func TestDialAddrReachesAWildcardListener(t *testing.T) {
	for _, tc := range []struct{ listen, want string }{
		{"0.0.0.0:8787", "127.0.0.1:8787"},
		{":8787", "127.0.0.1:8787"},
		{"[::]:8787", "[::1]:8787"},
		{"127.0.0.1:9000", "127.0.0.1:9000"},
		{"10.0.0.5:8787", "10.0.0.5:8787"},
	} {
		if got := dialAddr(tc.listen); got != tc.want {
			t.Errorf("dialAddr(%q) = %q, want %q", tc.listen, got, tc.want)
		}
	}
}

func TestHealthcheck(t *testing.T) {
	env, _, errOut := testEnv(t, t.TempDir())
	if code := run(context.Background(), env, []string{"healthcheck", "--url", "http://127.0.0.1:1"}); code != 1 || !strings.Contains(errOut.String(), "does not answer") {
		t.Fatalf("with nothing listening: exit %d %s", code, errOut)
	}
	addr, stop := startServe(t, env)
	defer stop()
	env2, out, errOut := testEnv(t, t.TempDir(), "ASB_ADDR="+addr)
	if code := run(context.Background(), env2, []string{"healthcheck"}); code != 0 || strings.TrimSpace(out.String()) != "ok" {
		t.Fatalf("with serve up: exit %d %s %s", code, out, errOut)
	}
}
