package main

// sandboxOptFlags are the SandboxOpts shared by `run` and `create`
// (crates/cli/lib/commands/common.rs at v0.6.9).
var sandboxOptFlags = []flagSpec{
	{long: "name", short: 'n', value: "NAME"},
	{long: "cpus", short: 'c', value: "CPUS"},
	{long: "max-cpus", value: "MAX_CPUS"},
	{long: "memory", short: 'm', value: "MEMORY"},
	{long: "max-memory", value: "MAX_MEMORY"},
	{long: "thp", value: "THP"},
	{long: "cpu-placement", value: "CPU_PLACEMENT"},
	{long: "placement-profile", value: "PLACEMENT_PROFILE"},
	{long: "volume", short: 'v', value: "VOLUME", multi: true},
	{long: "mount-dir", value: "MOUNT_DIR", multi: true},
	{long: "mount-file", value: "MOUNT_FILE", multi: true},
	{long: "mount-disk", value: "MOUNT_DISK", multi: true},
	{long: "mount-named", value: "MOUNT_NAMED", multi: true},
	{long: "tmpfs", value: "TMPFS", multi: true},
	{long: "workdir", short: 'w', value: "WORKDIR"},
	{long: "shell", value: "SHELL"},
	{long: "env", short: 'e', value: "ENV", multi: true},
	{long: "label", value: "LABEL", multi: true},
	{long: "replace"},
	{long: "replace-with-timeout", value: "REPLACE_WITH_TIMEOUT"},
	{long: "quiet", short: 'q'},
	{long: "copy", value: "COPY", multi: true},
	{long: "copy-file", value: "COPY_FILE", multi: true},
	{long: "copy-dir", value: "COPY_DIR", multi: true},
	{long: "mkdir", value: "MKDIR", multi: true},
	{long: "rm", value: "RM", multi: true},
	{long: "script", value: "SCRIPT", multi: true},
	{long: "script-raw", value: "SCRIPT_RAW", multi: true},
	{long: "script-path", value: "SCRIPT_PATH", multi: true},
	{long: "entrypoint", value: "ENTRYPOINT"},
	{long: "init", value: "INIT"},
	{long: "init-arg", value: "INIT_ARG", multi: true},
	{long: "init-env", value: "INIT_ENV", multi: true},
	{long: "hostname", short: 'H', value: "HOSTNAME"},
	{long: "user", short: 'u', value: "USER"},
	{long: "pull", value: "PULL"},
	{long: "root-disk", value: "ROOT_DISK"},
	{long: "oci-upper-size", value: "OCI_UPPER_SIZE"},
	{long: "log-level", value: "LOG_LEVEL"},
	{long: "max-duration", value: "MAX_DURATION"},
	{long: "idle-timeout", value: "IDLE_TIMEOUT"},
	{long: "security", value: "SECURITY"},
	{long: "deployment-profile", value: "DEPLOYMENT_PROFILE"},
	{long: "vsock", value: "VSOCK", multi: true},
	{long: "conf", value: "CONF", multi: true},
	{long: "net-conf", value: "NET_CONF", multi: true},
	{long: "resource-conf", value: "RESOURCE_CONF", multi: true},
	{long: "runtime-conf", value: "RUNTIME_CONF", multi: true},
	{long: "fs-conf", value: "FS_CONF", multi: true},
	{long: "secret-conf", value: "SECRET_CONF", multi: true},
	{long: "script-conf", value: "SCRIPT_CONF", multi: true},
	{long: "port", short: 'p', value: "PORT", multi: true},
	{long: "net", value: "NET", multi: true},
	{long: "no-net"},
	{long: "net-rule", value: "NET_RULE", multi: true},
	{long: "net-default", value: "NET_DEFAULT"},
	{long: "net-default-egress", value: "NET_DEFAULT_EGRESS"},
	{long: "net-default-ingress", value: "NET_DEFAULT_INGRESS"},
	{long: "no-dns-rebind-protection"},
	{long: "dns-nameserver", value: "DNS_NAMESERVER", multi: true},
	{long: "dns-query-timeout-ms", value: "DNS_QUERY_TIMEOUT_MS"},
	{long: "net-ipv4-pool", value: "NET_IPV4_POOL"},
	{long: "net-ipv6-pool", value: "NET_IPV6_POOL"},
	{long: "max-connections", value: "MAX_CONNECTIONS"},
	{long: "trust-host-cas"},
	{long: "net-egress-bandwidth", value: "NET_EGRESS_BANDWIDTH"},
	{long: "net-egress-bandwidth-burst", value: "NET_EGRESS_BANDWIDTH_BURST"},
	{long: "net-egress-ops", value: "NET_EGRESS_OPS"},
	{long: "net-egress-ops-burst", value: "NET_EGRESS_OPS_BURST"},
	{long: "net-ingress-bandwidth", value: "NET_INGRESS_BANDWIDTH"},
	{long: "net-ingress-bandwidth-burst", value: "NET_INGRESS_BANDWIDTH_BURST"},
	{long: "net-ingress-ops", value: "NET_INGRESS_OPS"},
	{long: "net-ingress-ops-burst", value: "NET_INGRESS_OPS_BURST"},
	{long: "tls-intercept"},
	{long: "tls-intercept-port", value: "TLS_INTERCEPT_PORT", multi: true},
	{long: "tls-bypass", value: "TLS_BYPASS", multi: true},
	{long: "no-block-quic"},
	{long: "tls-intercept-ca-cert", value: "TLS_INTERCEPT_CA_CERT"},
	{long: "tls-intercept-ca-key", value: "TLS_INTERCEPT_CA_KEY"},
	{long: "tls-upstream-ca-cert", value: "TLS_UPSTREAM_CA_CERT", multi: true},
	{long: "tls-upstream-ca-cert-for", value: "TLS_UPSTREAM_CA_CERT_FOR", multi: true},
	{long: "tls-no-verify-upstream-for", value: "TLS_NO_VERIFY_UPSTREAM_FOR", multi: true},
	{long: "secret", value: "SECRET", multi: true},
	{long: "on-secret-violation", value: "ON_SECRET_VIOLATION"},
}

// networkConflicts are clap's conflicts between the network flags.
var networkConflicts = [][2]string{
	{"net", "no-net"}, {"net", "net-default"}, {"net", "net-default-egress"}, {"net", "net-default-ingress"},
	{"no-net", "net-default"}, {"no-net", "net-default-egress"}, {"no-net", "net-default-ingress"},
	{"net-default", "net-default-egress"}, {"net-default", "net-default-ingress"},
}

// nonCreationFlags do not count as "creation flags" when `run` reuses an
// existing sandbox (they do not describe the sandbox).
var nonCreationFlags = map[string]bool{"name": true, "quiet": true, "pull": true, "log-level": true,
	"detach": true, "tty": true, "no-tty": true, "timeout": true, "rlimit": true, "detach-keys": true,
	"from-snapshot": true, "tree": true, "error": true, "warn": true, "info": true, "debug": true, "trace": true}

var createSpec = cmdSpec{name: "create", flags: sandboxOptFlags, maxPos: 1, conflicts: networkConflicts}

var runSpec = cmdSpec{
	name: "run", maxPos: 1, trailing: true,
	flags: append(append([]flagSpec{}, sandboxOptFlags...),
		flagSpec{long: "from-snapshot", aliases: []string{"from-snap"}, value: "PATH_OR_NAME"},
		flagSpec{long: "detach", short: 'd'},
		flagSpec{long: "tty", short: 't'},
		flagSpec{long: "no-tty"},
		flagSpec{long: "timeout", value: "TIMEOUT"},
		flagSpec{long: "rlimit", value: "RLIMIT", multi: true},
		flagSpec{long: "detach-keys", value: "DETACH_KEYS"},
	),
	conflicts: append([][2]string{{"tty", "no-tty"}}, networkConflicts...),
}

var execSpec = cmdSpec{
	name: "exec", maxPos: 1, trailing: true,
	flags: []flagSpec{
		{long: "env", short: 'e', value: "ENV", multi: true},
		{long: "workdir", short: 'w', value: "WORKDIR"},
		{long: "user", short: 'u', value: "USER"},
		{long: "tty", short: 't'},
		{long: "no-tty"},
		{long: "timeout", value: "TIMEOUT"},
		{long: "rlimit", value: "RLIMIT", multi: true},
		{long: "quiet", short: 'q'},
		{long: "stream"},
		{long: "detach-keys", value: "DETACH_KEYS"},
	},
	conflicts: [][2]string{{"tty", "no-tty"}, {"stream", "tty"}},
}

var copySpec = cmdSpec{name: "copy", maxPos: 2, flags: []flagSpec{{long: "quiet", short: 'q'}}}

var listSpec = cmdSpec{name: "list", maxPos: 0, flags: []flagSpec{
	{long: "running"}, {long: "stopped"}, {long: "label", value: "LABEL", multi: true},
	{long: "format", value: "FORMAT"}, {long: "quiet", short: 'q'},
}, conflicts: [][2]string{{"running", "stopped"}}}

var statusSpec = cmdSpec{name: "status", maxPos: 1, flags: []flagSpec{
	{long: "all", short: 'a'}, {long: "label", value: "LABEL", multi: true},
	{long: "format", value: "FORMAT"}, {long: "quiet", short: 'q'},
}}

var inspectSpec = cmdSpec{name: "inspect", maxPos: 1, flags: []flagSpec{{long: "format", value: "FORMAT"}}}

var metricsSpec = cmdSpec{name: "metrics", maxPos: 1, flags: []flagSpec{
	{long: "format", value: "FORMAT"}, {long: "watch", short: 'w'}, {long: "follow", short: 'f'},
	{long: "interval", value: "INTERVAL"}, {long: "all", short: 'a'}, {long: "sort", value: "SORT"},
}, conflicts: [][2]string{{"watch", "follow"}}}

var stopSpec = cmdSpec{name: "stop", maxPos: -1, flags: []flagSpec{
	{long: "force", short: 'f'}, {long: "timeout", short: 't', value: "TIMEOUT"},
	{long: "label", value: "LABEL", multi: true}, {long: "quiet", short: 'q'},
}}

var startSpec = cmdSpec{name: "start", maxPos: -1, flags: []flagSpec{
	{long: "label", value: "LABEL", multi: true}, {long: "quiet", short: 'q'},
}}

var restartSpec = cmdSpec{name: "restart", maxPos: -1, flags: stopSpec.flags}

var removeSpec = cmdSpec{name: "remove", maxPos: -1, flags: []flagSpec{
	{long: "force", short: 'f'}, {long: "label", value: "LABEL", multi: true}, {long: "quiet", short: 'q'},
}}

var touchSpec = cmdSpec{name: "touch", maxPos: -1, flags: []flagSpec{
	{long: "label", value: "LABEL", multi: true}, {long: "quiet", short: 'q'},
}}

var pingSpec = cmdSpec{name: "ping", maxPos: -1, flags: []flagSpec{
	{long: "touch"}, {long: "label", value: "LABEL", multi: true}, {long: "quiet", short: 'q'},
}}

var pullSpec = cmdSpec{name: "pull", maxPos: 1, flags: []flagSpec{
	{long: "force", short: 'f'}, {long: "quiet", short: 'q'}, {long: "insecure"},
	{long: "ca-certs", value: "CA_CERTS"}, {long: "materialize", value: "MATERIALIZE"},
}}

var doctorSpec = cmdSpec{name: "doctor", maxPos: 0, flags: []flagSpec{{long: "fix"}, {long: "yes", short: 'y'}}}
