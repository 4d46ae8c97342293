// Package deploy_test checks the deployment files statically (no Docker
// engine runs here) and runs setup.sh against a real sshd.
package deploy_test

import (
	"debug/elf"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// instruction is one Dockerfile instruction with its continuation lines
// joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, COPY, …
	args string
	line int
}

type stage struct {
	from, name string
	ins        []instruction
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.ins {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

func parseDockerfile(t *testing.T, src string) []stage {
	t.Helper()
	var stages []stage
	var cur strings.Builder
	start := 0
	flush := func() {
		text := strings.TrimSpace(cur.String())
		cur.Reset()
		if text == "" {
			return
		}
		cmd, args, _ := strings.Cut(text, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			s := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			return
		}
		if len(stages) == 0 {
			t.Fatalf("line %d: %s before the first FROM", in.line, in.cmd)
		}
		stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
	}
	for i, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			continue // comments may sit between continuation lines too
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if body, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(trimmed)
		flush()
	}
	flush()
	return stages
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// goVersion is go.mod's "go 1.26.0" as "1.26".
func goVersion(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(readFile(t, "../go.mod"))
	if m == nil {
		t.Fatal("no go directive in go.mod")
	}
	return m[1]
}

// makeBuilds is what `make build` produces: output name → package.
func makeBuilds(t *testing.T) map[string]string {
	t.Helper()
	mk := readFile(t, "../Makefile")
	_, target, ok := strings.Cut(mk, "\nbuild:")
	if !ok {
		t.Fatal("no build target in the Makefile")
	}
	if end := strings.Index(target, "\n\n"); end >= 0 {
		target = target[:end]
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`-o \$\(BIN\)/(\S+) (\./\S+)`).FindAllStringSubmatch(target, -1) {
		out[m[1]] = m[2]
	}
	if len(out) < 3 {
		t.Fatalf("make build makes %v; expected asb and two hooks", out)
	}
	return out
}

// dockerBuilds is what the builder stage's go build commands produce.
var goBuildOut = regexp.MustCompile(`go build [^&]*-o /out/(\S+) (\./\S+)`)

func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t, readFile(t, "Dockerfile"))
	if len(stages) < 2 {
		t.Fatalf("want a multi-stage build, got %d stage(s)", len(stages))
	}
	builder, runtime := stages[0], stages[len(stages)-1]

	// The builder is the official Go image of go.mod's release, on the same
	// Debian release as the runtime (asb links against its glibc).
	want := "golang:" + goVersion(t) + "-"
	if !strings.HasPrefix(builder.from, want) || builder.name == "" {
		t.Errorf("builder FROM %s AS %q: want %s<debian> AS <name>", builder.from, builder.name, want)
	}
	debian := strings.TrimPrefix(builder.from, want)
	if runtime.from != "debian:"+debian+"-slim" {
		t.Errorf("runtime FROM %s: want debian:%s-slim, the builder's Debian release", runtime.from, debian)
	}

	// The same binaries, from the same packages, as make build; asb with cgo.
	builds := map[string]string{}
	var cgo bool
	for _, run := range builder.all("RUN") {
		for _, m := range goBuildOut.FindAllStringSubmatch(run.args, -1) {
			builds[m[1]] = m[2]
		}
		if regexp.MustCompile(`CGO_ENABLED=1 go build [^&]*-o /out/asb \./cmd/asb\b`).MatchString(run.args) {
			cgo = true
		}
	}
	if fmt.Sprint(builds) != fmt.Sprint(makeBuilds(t)) {
		t.Errorf("the image builds %v, make build makes %v", builds, makeBuilds(t))
	}
	if !cgo {
		t.Error("asb is not built with CGO_ENABLED=1 (go-sqlite3 needs cgo)")
	}

	// Every binary lands in one folder of the runtime image: serve looks for
	// asb-hook-linux-<arch> next to its own executable.
	var copied []string
	binDir := ""
	for _, c := range runtime.all("COPY") {
		f := strings.Fields(c.args)
		if len(f) < 3 || f[0] != "--from="+builder.name {
			continue
		}
		binDir = f[len(f)-1]
		for _, src := range f[1 : len(f)-1] {
			copied = append(copied, strings.TrimPrefix(src, "/out/"))
		}
	}
	for name := range builds {
		if !slices.Contains(copied, name) {
			t.Errorf("%s is built but not copied into the runtime image (copied: %v)", name, copied)
		}
	}
	if !strings.HasSuffix(binDir, "/") {
		t.Errorf("binaries copied to %q: want a folder ending in /", binDir)
	}

	// A non-root user, set after the last RUN (which may need root).
	users := runtime.all("USER")
	if len(users) == 0 {
		t.Fatal("no USER in the runtime stage: asb would run as root")
	}
	user := users[len(users)-1]
	if name, _, _ := strings.Cut(user.args, ":"); name == "root" || name == "0" {
		t.Errorf("USER %s is root", user.args)
	}
	for _, r := range runtime.all("RUN") {
		if r.line > user.line {
			t.Errorf("line %d: RUN after USER", r.line)
		}
	}
	for _, pkg := range []string{"ca-certificates", "openssh-client", "git", "sqlite3"} {
		if !slices.ContainsFunc(runtime.all("RUN"), func(r instruction) bool {
			return strings.Contains(r.args, "apt-get install") && slices.Contains(strings.Fields(r.args), pkg)
		}) {
			t.Errorf("the runtime image does not install %s", pkg)
		}
	}

	// No secret baked in: no ENV or ARG whose name says token, key, secret
	// or password, in any stage.
	secretName := regexp.MustCompile(`(?i)(TOKEN|KEY|SECRET|PASSWORD)`)
	env := map[string]string{}
	for _, s := range stages {
		for _, in := range slices.Concat(s.all("ENV"), s.all("ARG")) {
			for _, kv := range regexp.MustCompile(`(\w+)=(\S*)`).FindAllStringSubmatch(in.args, -1) {
				if secretName.MatchString(kv[1]) {
					t.Errorf("line %d: %s %s bakes a secret into the image", in.line, in.cmd, kv[1])
				}
				if in.cmd == "ENV" {
					env[kv[1]] = kv[2]
				}
			}
		}
	}

	// Reachable from outside the container, state in the volume.
	if env["ASB_ADDR"] != "0.0.0.0:8787" || env["ASB_DATA_DIR"] != "/data" {
		t.Errorf("ENV ASB_ADDR=%q ASB_DATA_DIR=%q: want 0.0.0.0:8787 and /data", env["ASB_ADDR"], env["ASB_DATA_DIR"])
	}
	if e := runtime.all("EXPOSE"); len(e) != 1 || e[0].args != "8787" {
		t.Errorf("EXPOSE %v: want 8787", e)
	}
	if v := runtime.all("VOLUME"); len(v) != 1 || !strings.Contains(v[0].args, `"/data"`) {
		t.Errorf("VOLUME %v: want /data", v)
	}

	// The health check and the entrypoint run the copied binary.
	hc := runtime.all("HEALTHCHECK")
	if len(hc) != 1 || !strings.Contains(hc[0].args, `CMD ["`+binDir+`asb", "healthcheck"]`) {
		t.Errorf("HEALTHCHECK %v: want CMD [%q, \"healthcheck\"]", hc, binDir+"asb")
	}
	ep, cmd := runtime.all("ENTRYPOINT"), runtime.all("CMD")
	if len(ep) != 1 || ep[0].args != `["`+binDir+`asb"]` || len(cmd) != 1 || cmd[0].args != `["serve"]` {
		t.Errorf("ENTRYPOINT %v CMD %v: want the asb binary running serve", ep, cmd)
	}

	// State and secrets stay out of the build context.
	ignore := strings.Fields(readFile(t, "Dockerfile.dockerignore"))
	for _, p := range []string{"**/.env", "data", "bin", "**/*.pem", "**/*.key", ".git"} {
		if !slices.Contains(ignore, p) {
			t.Errorf("Dockerfile.dockerignore does not exclude %s", p)
		}
	}
}

// TestDockerfileBuildCommandsWork runs the builder stage's go build lines
// here (with /out a temporary folder) and checks what they make: asb with
// cgo that answers the image's HEALTHCHECK, and a static asb-hook for each
// architecture.
func TestDockerfileBuildCommandsWork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds asb and two hook binaries")
	}
	stages := parseDockerfile(t, readFile(t, "Dockerfile"))
	out := t.TempDir()
	for _, run := range stages[0].all("RUN") {
		if !strings.Contains(run.args, "go build") {
			continue
		}
		script := strings.ReplaceAll(run.args, "/out", out)
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "VERSION=test-image")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("line %d: %v\n%s", run.line, err, b)
		}
	}
	for name, machine := range map[string]elf.Machine{"asb-hook-linux-amd64": elf.EM_X86_64, "asb-hook-linux-arm64": elf.EM_AARCH64} {
		f, err := elf.Open(filepath.Join(out, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		interp := f.Section(".interp")
		f.Close()
		if f.Machine != machine || interp != nil {
			t.Errorf("%s: machine %v, dynamic %v; want static %v", name, f.Machine, interp != nil, machine)
		}
	}
	asb := filepath.Join(out, "asb")
	if b, err := exec.Command(asb, "version").Output(); err != nil || strings.TrimSpace(string(b)) != "asb test-image" {
		t.Fatalf("asb version: %q %v", b, err)
	}
	if f, err := elf.Open(asb); err != nil {
		t.Fatal(err)
	} else {
		libs, _ := f.ImportedLibraries()
		f.Close()
		if !slices.ContainsFunc(libs, func(l string) bool { return strings.HasPrefix(l, "libc.so") }) {
			t.Errorf("asb links %v: want a cgo build against libc", libs)
		}
	}

	// The HEALTHCHECK command fails while nothing listens and passes once
	// serve is up, with the image's environment.
	port := freePort(t)
	data := t.TempDir()
	env := append(os.Environ(), "ASB_ADDR=0.0.0.0:"+port, "ASB_DATA_DIR="+data, "HOME="+data)
	check := exec.Command(asb, "healthcheck")
	check.Dir, check.Env = data, env
	if err := check.Run(); err == nil {
		t.Fatal("healthcheck passed with nothing listening")
	}
	serve := exec.Command(asb, "serve")
	serve.Dir, serve.Env = data, env
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill(); serve.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		check := exec.Command(asb, "healthcheck")
		check.Dir, check.Env = data, env
		b, err := check.CombinedOutput()
		if err == nil && strings.TrimSpace(string(b)) == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("healthcheck never passed: %v %s", err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}
