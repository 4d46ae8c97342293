package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Patch is a rootfs patch applied before the first boot (--copy*, --mkdir,
// --rm, --script*).
type Patch struct {
	Kind string `json:"kind"`
	Src  string `json:"src,omitempty"`
	Dst  string `json:"dst"`
	Body string `json:"body,omitempty"`
}

// Secret is a --secret ENV@HOST[,HOST...] declaration (value read at start).
type Secret struct {
	Env   string   `json:"env"`
	Hosts []string `json:"hosts"`
}

// createOpts is the parsed SandboxOpts of create/run.
type createOpts struct {
	name    string
	image   string
	cfg     BoxConfig
	replace bool
	quiet   bool
	// creationFlags lists flags that describe the sandbox, for the reuse warning.
	creationFlags []string
}

// parseSandboxOpts validates SandboxOpts in the order msb reports problems:
// clap value types first (exit 2), then config errors (exit 1).
func parseSandboxOpts(p *parsedArgs) (*createOpts, error) {
	o := &createOpts{cfg: BoxConfig{Shell: "/bin/sh", Thp: "madvise", PullPolicy: "if-missing",
		Security: "default", Deployment: "single-tenant", Labels: map[string]string{},
		Env: []EnvVar{}, Mounts: []Mount{}, Ports: []Port{}, Patches: []Patch{}, Rlimits: []string{}}}
	if len(p.pos) > 0 {
		o.image = p.pos[0]
	}
	for _, f := range p.order {
		if !nonCreationFlags[f] {
			o.creationFlags = append(o.creationFlags, f)
		}
	}
	o.replace = p.has("replace") || p.has("replace-with-timeout")
	o.quiet = p.has("quiet")
	steps := []func(*parsedArgs) error{o.parseIdentity, o.parseResources, o.parseRuntime, o.parseEnv,
		o.parseLabels, o.parseMounts, o.parsePorts, o.parseNetwork, o.parseLifecycle, o.parseSecrets,
		o.parsePatches, o.parseScripts, o.parseProfiles, o.keepExtras}
	for _, step := range steps {
		if err := step(p); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func (o *createOpts) parseIdentity(p *parsedArgs) error {
	if p.has("name") {
		o.name = p.get("name")
		if err := validateName(o.name); err != nil {
			return err
		}
	}
	if p.has("pull") {
		v, err := parsePullPolicy(p.get("pull"))
		if err != nil {
			return err
		}
		o.cfg.PullPolicy = v
	}
	return nil
}

func (o *createOpts) parseResources(p *parsedArgs) error {
	cpus, err := clapUint(p, "cpus", "CPUS", 8, 1)
	if err != nil {
		return err
	}
	maxCpus, err := clapUint(p, "max-cpus", "MAX_CPUS", 8, cpus)
	if err != nil {
		return err
	}
	if cpus == 0 {
		return fmt.Errorf("invalid config: cpus must be at least 1")
	}
	if maxCpus < cpus {
		return fmt.Errorf("invalid config: max_cpus (%d) must be greater than or equal to cpus (%d)", maxCpus, cpus)
	}
	o.cfg.Cpus, o.cfg.MaxCpus = int(cpus), int(maxCpus)
	o.cfg.MemoryMiB, o.cfg.MaxMemoryMiB = 512, 0
	if p.has("memory") {
		if o.cfg.MemoryMiB, err = parseSizeMiB(p.get("memory")); err != nil {
			return err
		}
	}
	o.cfg.MaxMemoryMiB = o.cfg.MemoryMiB
	if p.has("max-memory") {
		if o.cfg.MaxMemoryMiB, err = parseSizeMiB(p.get("max-memory")); err != nil {
			return err
		}
		if o.cfg.MaxMemoryMiB < o.cfg.MemoryMiB {
			return fmt.Errorf("invalid config: max_memory (%d MiB) must be greater than or equal to memory (%d MiB)", o.cfg.MaxMemoryMiB, o.cfg.MemoryMiB)
		}
	}
	if p.has("thp") {
		v := p.get("thp")
		if v != "always" && v != "madvise" && v != "never" {
			return usageErr(p.cmd, "invalid value '%s' for '--thp <THP>'\n  [possible values: always, madvise, never]", v)
		}
		o.cfg.Thp = v
	}
	return nil
}

// clapUint parses an integer flag typed in clap (errors are usage errors, exit 2).
func clapUint(p *parsedArgs, flag, value string, bits int, def uint64) (uint64, error) {
	if !p.has(flag) {
		return def, nil
	}
	v, err := parseRustUint(p.get(flag), bits)
	if err != nil {
		return 0, usageErr(p.cmd, "invalid value '%s' for '--%s <%s>': %s", p.get(flag), flag, value, err)
	}
	return v, nil
}

func (o *createOpts) parseRuntime(p *parsedArgs) error {
	if p.has("workdir") {
		wd := p.get("workdir")
		if !strings.HasPrefix(wd, "/") {
			return fmt.Errorf("invalid config: workdir must be an absolute path: %s", wd)
		}
		o.cfg.Workdir = filepath.Clean(wd)
	}
	if p.has("shell") {
		o.cfg.Shell = p.get("shell")
	}
	if p.has("user") {
		o.cfg.User = p.get("user")
	}
	if p.has("hostname") {
		o.cfg.Hostname = p.get("hostname")
	}
	if p.has("entrypoint") {
		o.cfg.Entrypoint = []string{p.get("entrypoint")}
	}
	for _, r := range p.all("rlimit") {
		if err := parseRlimit(r); err != nil {
			return err
		}
		o.cfg.Rlimits = append(o.cfg.Rlimits, r)
	}
	return nil
}

func (o *createOpts) parseEnv(p *parsedArgs) error {
	for _, e := range p.all("env") {
		v, err := parseEnvFlag(e)
		if err != nil {
			return err
		}
		o.cfg.Env = append(o.cfg.Env, v)
	}
	return nil
}

func (o *createOpts) parseLabels(p *parsedArgs) error {
	for _, l := range p.all("label") {
		k, v, _ := strings.Cut(l, "=")
		if k == "" {
			return fmt.Errorf("invalid label '%s': expected KEY[=VALUE]", l)
		}
		for _, reserved := range []string{"sandbox.", "microsandbox.", "service."} {
			if strings.HasPrefix(k, reserved) {
				return fmt.Errorf("invalid config: label key '%s' uses the reserved prefix '%s'", k, reserved)
			}
		}
		o.cfg.Labels[k] = v
	}
	return nil
}

func (o *createOpts) parseMounts(p *parsedArgs) error {
	for _, v := range p.all("volume") {
		m, err := parseVolume(v)
		if err != nil {
			return err
		}
		o.cfg.Mounts = append(o.cfg.Mounts, m)
	}
	return nil
}

func (o *createOpts) parsePorts(p *parsedArgs) error {
	for _, v := range p.all("port") {
		port, err := parsePort(v)
		if err != nil {
			return err
		}
		o.cfg.Ports = append(o.cfg.Ports, port)
	}
	return nil
}

func (o *createOpts) parseNetwork(p *parsedArgs) error {
	n, err := buildNetwork(p)
	if err != nil {
		return err
	}
	o.cfg.Network = n
	return nil
}

func (o *createOpts) parseLifecycle(p *parsedArgs) error {
	for _, f := range []struct {
		flag string
		dst  **uint64
	}{{"max-duration", &o.cfg.MaxDurationSecs}, {"idle-timeout", &o.cfg.IdleTimeoutSecs}} {
		if !p.has(f.flag) {
			continue
		}
		v, err := parseDurationSecs(p.get(f.flag))
		if err != nil {
			return err
		}
		*f.dst = &v
	}
	if p.has("replace-with-timeout") {
		if _, err := parseShortDuration(p.get("replace-with-timeout")); err != nil {
			return err
		}
	}
	return nil
}

// parseShortDuration accepts `0`, `500ms`, `5s`, `2m`, `1h` (--replace-with-timeout,
// metrics --interval).
func parseShortDuration(s string) (time.Duration, error) {
	if v, err := parseRustUint(s, 64); err == nil {
		return time.Duration(v) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid duration '%s': expected e.g. 500ms, 5s, 2m or 1h", s)
	}
	return d, nil
}

func (o *createOpts) parseSecrets(p *parsedArgs) error {
	for _, s := range p.all("secret") {
		env, hosts, ok := strings.Cut(s, "@")
		if strings.Contains(env, "=") {
			return fmt.Errorf("inline secret values (ENV=VALUE@HOST) are not supported by `create`; export the variable and pass --secret ENV@HOST")
		}
		if !ok || env == "" || hosts == "" {
			return fmt.Errorf("invalid secret '%s': expected ENV@HOST[,HOST...]", s)
		}
		o.cfg.Secrets = append(o.cfg.Secrets, Secret{Env: env, Hosts: strings.Split(hosts, ",")})
	}
	return nil
}

// parsePatches validates --copy/--copy-file/--copy-dir/--mkdir/--rm.
func (o *createOpts) parsePatches(p *parsedArgs) error {
	next := map[string]int{} // values are consumed in command-line order
	for _, name := range p.order {
		if name != "copy" && name != "copy-file" && name != "copy-dir" && name != "mkdir" && name != "rm" {
			continue
		}
		v := p.vals[name][next[name]]
		next[name]++
		patch, err := parsePatch(name, v)
		if err != nil {
			return err
		}
		o.cfg.Patches = append(o.cfg.Patches, patch)
	}
	return nil
}

func parsePatch(kind, v string) (Patch, error) {
	if kind == "mkdir" || kind == "rm" {
		if !strings.HasPrefix(v, "/") {
			return Patch{}, fmt.Errorf("--%s: path must be absolute: %s", kind, v)
		}
		return Patch{Kind: kind, Dst: filepath.Clean(v)}, nil
	}
	i := strings.LastIndex(v, ":/")
	if i <= 0 {
		return Patch{}, fmt.Errorf("--%s: expected SRC:DST with an absolute DST: %s", kind, v)
	}
	src, dst := v[:i], v[i+1:]
	fi, err := os.Stat(src)
	switch {
	case err != nil:
		return Patch{}, fmt.Errorf("--%s: %s does not exist", kind, src)
	case kind == "copy-dir" && !fi.IsDir():
		return Patch{}, fmt.Errorf("--copy-dir: %s is not a directory", src)
	case kind == "copy-file" && !fi.Mode().IsRegular():
		return Patch{}, fmt.Errorf("--copy-file: %s is not a file", src)
	}
	abs, err := filepath.Abs(src)
	if err != nil {
		return Patch{}, fmt.Errorf("--%s: %w", kind, err)
	}
	return Patch{Kind: kind, Src: abs, Dst: filepath.Clean(dst)}, nil
}

func (o *createOpts) parseScripts(p *parsedArgs) error {
	for _, s := range p.all("script") {
		name, body, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return fmt.Errorf("invalid script '%s': expected NAME=BODY", s)
		}
		if !strings.HasPrefix(body, "#!") {
			body = "#!/bin/sh\n" + body + "\n"
		}
		o.cfg.Patches = append(o.cfg.Patches, Patch{Kind: "script", Dst: "/.msb/scripts/" + name, Body: body})
	}
	for _, s := range p.all("script-raw") {
		name, body, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return fmt.Errorf("invalid script '%s': expected NAME=BODY", s)
		}
		o.cfg.Patches = append(o.cfg.Patches, Patch{Kind: "script", Dst: "/.msb/scripts/" + name, Body: body})
	}
	for _, s := range p.all("script-path") {
		name, src, ok := strings.Cut(s, ":")
		data, err := os.ReadFile(src)
		if !ok || name == "" || err != nil {
			return fmt.Errorf("invalid script '%s': expected NAME:PATH to a readable file", s)
		}
		o.cfg.Patches = append(o.cfg.Patches, Patch{Kind: "script", Dst: "/.msb/scripts/" + name, Body: string(data)})
	}
	return nil
}

func (o *createOpts) parseProfiles(p *parsedArgs) error {
	if p.has("security") {
		v := p.get("security")
		if v != "default" && v != "restricted" {
			return usageErr(p.cmd, "invalid value '%s' for '--security <SECURITY>'\n  [possible values: default, restricted]", v)
		}
		o.cfg.Security = v
	}
	if p.has("deployment-profile") {
		v := p.get("deployment-profile")
		if v != "single-tenant" && v != "multi-tenant" {
			return usageErr(p.cmd, "invalid value '%s' for '--deployment-profile <DEPLOYMENT_PROFILE>'\n  [possible values: single-tenant, multi-tenant]", v)
		}
		o.cfg.Deployment = v
	}
	return nil
}

// handledFlags are turned into typed config; every other flag is stored raw.
var handledFlags = map[string]bool{"name": true, "cpus": true, "max-cpus": true, "memory": true, "max-memory": true,
	"thp": true, "volume": true, "workdir": true, "shell": true, "env": true, "label": true, "replace": true,
	"replace-with-timeout": true, "quiet": true, "copy": true, "copy-file": true, "copy-dir": true, "mkdir": true,
	"rm": true, "script": true, "script-raw": true, "script-path": true, "entrypoint": true, "hostname": true,
	"user": true, "pull": true, "max-duration": true, "idle-timeout": true, "security": true,
	"deployment-profile": true, "port": true, "net": true, "no-net": true, "net-rule": true, "net-default": true,
	"net-default-egress": true, "net-default-ingress": true, "no-dns-rebind-protection": true,
	"dns-nameserver": true, "secret": true, "rlimit": true}

func (o *createOpts) keepExtras(p *parsedArgs) error {
	for k, v := range p.vals {
		if handledFlags[k] || nonCreationFlags[k] {
			continue
		}
		if o.cfg.Extra == nil {
			o.cfg.Extra = map[string][]string{}
		}
		o.cfg.Extra[k] = append([]string{}, v...)
	}
	return nil
}
