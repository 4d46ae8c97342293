#!/bin/sh
# Prepare this machine to run asb against one KVM host with msb:
#   1. an ed25519 SSH key for asb (DIR/ssh/asb_ed25519, mode 0600),
#   2. the host's SSH key pinned in DIR/ssh/known_hosts, after you confirm
#      its fingerprint,
#   3. a check that asb's key logs in and `msb --version` answers there,
#   4. DIR/.env (mode 0600) with SANDBOX_HOSTS, SSH_KEY_FILE, SSH_KNOWN_HOSTS
#      and a generated MCP_HTTP_TOKEN, which is never printed.
# It stops at the first problem and says how to fix it; what it already did
# is kept, so run it again after the fix. A second run changes nothing.
# See docs/self-hosting.md.
set -eu

usage() {
	cat <<'EOF'
Usage: setup.sh [--yes] [--dir DIR] [--msb PATH] HOST

  HOST        the KVM host with msb: ssh://user@host[:port] or user@host[:port]
  --dir DIR   where to write .env and ssh/ (default: the current folder;
              use the deploy/ folder for compose.yaml)
  --msb PATH  msb on the host, if it is not on the login PATH (sets MSB_PATH)
  --yes       pin the host key without asking (only when you have checked
              its fingerprint some other way)
EOF
}

say() { printf '%s\n' "$*"; }
fail() {
	printf 'setup.sh: %s\n' "$1" >&2
	shift
	for line in "$@"; do printf '  %s\n' "$line" >&2; done
	exit 1
}

yes=0
dir=.
msb=
target=
while [ $# -gt 0 ]; do
	case $1 in
	--yes | -y) yes=1 ;;
	--dir)
		[ $# -ge 2 ] || { usage >&2; exit 2; }
		dir=$2
		shift
		;;
	--msb)
		[ $# -ge 2 ] || { usage >&2; exit 2; }
		msb=$2
		shift
		;;
	-h | --help) usage; exit 0 ;;
	-*) printf 'setup.sh: unknown option %s\n\n' "$1" >&2; usage >&2; exit 2 ;;
	*)
		[ -z "$target" ] || { printf 'setup.sh: one host at a time\n\n' >&2; usage >&2; exit 2; }
		target=$1
		;;
	esac
	shift
done
[ -n "$target" ] || { usage >&2; exit 2; }

for tool in ssh ssh-keygen ssh-keyscan od; do
	command -v "$tool" >/dev/null 2>&1 ||
		fail "$tool is not installed." "On Debian or Ubuntu: sudo apt-get install openssh-client coreutils"
done

# ------------------------------------------------------------ the host
# The same strict form asb accepts in SANDBOX_HOSTS: these characters only,
# since the host ends up in an SSH command line and in .env.
hostspec=${target#ssh://}
case $hostspec in
*[!A-Za-z0-9._@:\[\]-]* | '')
	fail "\"$target\" is not a host asb accepts." "Use ssh://user@host[:port] with letters, digits and . _ - only (IPv6 in brackets)." ;;
esac
case $hostspec in
?*@?*) ;;
*) fail "\"$target\" has no user." "Use ssh://user@host[:port], e.g. ssh://asb@kvm1.example.com (a dedicated account, see docs/sandbox-hosts.md)." ;;
esac
user=${hostspec%%@*}
hostport=${hostspec#*@}
port=22
case $hostport in
\[*\]:*) host=${hostport%%]:*}; host=${host#\[}; port=${hostport##*]:} ;;
\[*\]) host=${hostport#\[}; host=${host%]} ;;
*:*:*) fail "\"$target\": put an IPv6 address in brackets, e.g. ssh://asb@[2001:db8::7]:22." ;;
*:*) host=${hostport%%:*}; port=${hostport#*:} ;;
*) host=$hostport ;;
esac
case $user$host in *@* | *\[* | *\]*) fail "\"$target\" is not user@host[:port]." ;; esac
case $user in -*) fail "\"$target\": a user name cannot start with -." ;; esac
case $host in -*) fail "\"$target\": a host name cannot start with -." ;; esac
case $port in
'' | 0* | *[!0-9]*) fail "\"$target\": the port must be a number from 1 to 65535." ;;
esac
[ "$port" -ge 1 ] && [ "$port" -le 65535 ] || fail "\"$target\": the port must be a number from 1 to 65535."
[ -n "$host" ] || fail "\"$target\" has no host name."

# How known_hosts and SANDBOX_HOSTS name the host: [host]:port and
# user@host:port, with the port left out when it is 22.
case $host in *:*) bracketed="[$host]" ;; *) bracketed=$host ;; esac
if [ "$port" = 22 ]; then
	entry=$host
	sandbox_host="ssh://$user@$bracketed"
else
	entry="[$host]:$port"
	sandbox_host="ssh://$user@$bracketed:$port"
fi

if [ -n "$msb" ]; then
	case $msb in
	-* | *[!A-Za-z0-9._/-]*) fail "--msb $msb: use a plain name or an absolute path (letters, digits, . _ - /)." ;;
	esac
fi
msb_cmd=${msb:-msb}

# -------------------------------------------------------------- folders
umask 077
if [ ! -d "$dir/ssh" ]; then
	mkdir -p "$dir/ssh"
	# Others may enter (a container's user reads the key by its own mode).
	chmod 755 "$dir/ssh"
fi
dir=$(cd "$dir" && pwd)
case $dir in *\'* | *'
'*) fail "the folder $dir has a quote or a newline in its name; pick another --dir." ;; esac
key=$dir/ssh/asb_ed25519
known=$dir/ssh/known_hosts
envfile=$dir/.env
changed=0

# ----------------------------------------------------------- 1. the key
if [ -f "$key" ]; then
	say "ok      SSH key $key"
else
	ssh-keygen -q -t ed25519 -N '' -C "asb@$(hostname 2>/dev/null || echo controller)" -f "$key" </dev/null ||
		fail "ssh-keygen could not create $key."
	changed=1
	say "created SSH key $key"
fi
mode=$(ls -ln "$key" | cut -c1-10)
if [ "$mode" != "-rw-------" ]; then
	chmod 600 "$key"
	changed=1
	say "fixed   $key was $mode; now 0600 (ssh refuses a key others can read)"
fi

# ------------------------------------------------------ 2. the host key
if [ -f "$known" ] && ssh-keygen -F "$entry" -f "$known" >/dev/null 2>&1; then
	say "ok      host key of $entry is pinned in $known"
else
	scan=$(mktemp)
	trap 'rm -f "$scan"' EXIT
	ssh-keyscan -T 10 -p "$port" "$host" >"$scan" 2>/dev/null || true
	[ -s "$scan" ] || fail "cannot reach an SSH server at $host port $port: ssh-keyscan got no host key." \
		"Is the host up, is sshd running, and is $port its SSH port? Try: ssh -p $port $user@$host" \
		"A firewall that drops the connection looks the same."
	say "The host $entry presents these keys:"
	ssh-keygen -lf "$scan" | sed 's/^/    /'
	if [ "$yes" = 0 ]; then
		[ -t 0 ] || fail "cannot ask whether these fingerprints are right: no terminal." \
			"Compare them with the host's own (on the host: ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub)," \
			"then run setup.sh again with --yes."
		printf 'Compare them with the host'"'"'s own (on the host: ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub).\nDo they match? [y/N] '
		read -r answer || answer=
		case $answer in
		y | Y | yes | YES | Yes) ;;
		*) fail "host key not pinned: nothing was changed on its account." \
			"If the fingerprints differ, someone may be intercepting the connection: ask the host's administrator." ;;
		esac
	fi
	cat "$scan" >>"$known"
	chmod 644 "$known"
	changed=1
	say "pinned  host key of $entry in $known"
fi

# ------------------------------------------------- 3. log in, run msb
err=$(mktemp)
trap 'rm -f "${scan:-}" "$err"' EXIT
set +e
version=$(ssh -F /dev/null -i "$key" -o IdentitiesOnly=yes -o BatchMode=yes \
	-o StrictHostKeyChecking=yes -o UserKnownHostsFile="$known" -o GlobalKnownHostsFile=/dev/null \
	-o ConnectTimeout=10 -p "$port" "$user@$host" "$msb_cmd --version" </dev/null 2>"$err")
code=$?
set -e
if [ "$code" = 255 ]; then
	if grep -q 'Permission denied' "$err"; then
		fail "the host refused asb's key: $user@$host does not have it in its authorized_keys yet." \
			"Add this line to ~$user/.ssh/authorized_keys on the host:" \
			"  $(cat "$key.pub")" \
			"or from here, with a password or another key that can log in: ssh-copy-id -i $key.pub -p $port $user@$host" \
			"Then run setup.sh again."
	fi
	if grep -q 'Host key verification failed' "$err"; then
		fail "the host's SSH key is not the one pinned for $entry in $known." \
			"The host was reinstalled or re-keyed, or someone is intercepting the connection." \
			"Only once the host's administrator confirms the new key: ssh-keygen -R '$entry' -f $known" \
			"then run setup.sh again to pin the new key (compare the fingerprint it shows)."
	fi
	fail "cannot log in to $user@$host port $port with $key:" "$(sed 's/^/  /' "$err")"
fi
case $version in
msb\ *) ;;
*)
	fail "logged in to $user@$host, but \`$msb_cmd --version\` did not answer like msb (exit $code)." \
		"$(sed 's/^/  /' "$err")" \
		"Install msb 0.6.9 there for $user (docs/sandbox-hosts.md), or pass --msb /absolute/path/to/msb" \
		"if it is installed off the login PATH (e.g. --msb /root/.microsandbox/bin/msb)."
	;;
esac
say "ok      $user@$host runs $version"

# -------------------------------------------------------------- 4. .env
if [ ! -f "$envfile" ]; then
	example=
	for f in "$dir/.env.example" "$(cd "$(dirname "$0")/.." && pwd)/.env.example"; do
		if [ -f "$f" ]; then example=$f; break; fi
	done
	if [ -n "$example" ]; then
		cp "$example" "$envfile"
		say "created $envfile from $example"
	else
		printf '# asb configuration; every variable is described in docs/configuration.md.\n' >"$envfile"
		say "created $envfile"
	fi
	changed=1
fi
mode=$(ls -ln "$envfile" | cut -c1-10)
if [ "$mode" != "-rw-------" ]; then
	chmod 600 "$envfile"
	changed=1
	say "fixed   $envfile was $mode; now 0600 (it holds secrets)"
fi

# current KEY: the value of the last active KEY= line in .env (the one
# asb uses), without its quotes.
current() {
	awk -v k="$1" -v q="'" '
		{ sub(/\r$/, ""); line = $0; sub(/^[ \t]*(export[ \t]+)?/, "", line) }
		index(line, k "=") == 1 {
			v = substr(line, length(k) + 2); sub(/[ \t]+#.*$/, "", v); gsub(/^[ \t]+|[ \t]+$/, "", v)
			f = substr(v, 1, 1)
			if (length(v) >= 2 && (f == "\"" || f == q) && substr(v, length(v)) == f) v = substr(v, 2, length(v) - 2)
			found = v
		}
		END { printf "%s", found }' "$envfile"
}

# put KEY: sets KEY to $ASB_SETUP_VALUE (read from the environment, so a
# secret never appears in a command line). It replaces the last active
# KEY= line (the one that wins), else the first commented-out one, else
# appends a line.
put() {
	tmp=$(mktemp "$dir/.env.XXXXXX")
	awk -v k="$1" '
		function key(s) { sub(/^[ \t]*(export[ \t]+)?/, "", s); return index(s, k "=") == 1 }
		function commented(s) { if (s !~ /^[ \t]*#/) return 0; sub(/^[ \t]*#[ \t]*/, "", s); return key(s) }
		NR == FNR { if (key($0)) active = FNR; else if (!first && commented($0)) first = FNR; next }
		FNR == (active ? active : first) { print k "=" ENVIRON["ASB_SETUP_VALUE"]; next }
		{ print }
		END { if (!active && !first) print k "=" ENVIRON["ASB_SETUP_VALUE"] }' "$envfile" "$envfile" >"$tmp"
	chmod 600 "$tmp"
	mv "$tmp" "$envfile"
	changed=1
}

# A value .env keeps verbatim: single-quoted when it is not plain.
envvalue() {
	case $1 in
	*[!A-Za-z0-9._/:@,+=-]*) printf "'%s'" "$1" ;;
	*) printf '%s' "$1" ;;
	esac
}

if [ -n "$(current MCP_HTTP_TOKEN)" ]; then
	say "ok      MCP_HTTP_TOKEN is set in $envfile"
else
	ASB_SETUP_VALUE=asb_$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
	export ASB_SETUP_VALUE
	put MCP_HTTP_TOKEN
	unset ASB_SETUP_VALUE
	say "set     MCP_HTTP_TOKEN in $envfile (generated; read it there, it is not shown)"
fi

hosts=$(current SANDBOX_HOSTS)
case ",$(printf '%s' "$hosts" | tr -d ' ')," in
*,"$sandbox_host",*) say "ok      SANDBOX_HOSTS has $sandbox_host" ;;
*)
	if [ -n "$hosts" ]; then
		ASB_SETUP_VALUE=$(envvalue "$hosts,$sandbox_host")
	else
		ASB_SETUP_VALUE=$sandbox_host
	fi
	export ASB_SETUP_VALUE
	put SANDBOX_HOSTS
	unset ASB_SETUP_VALUE
	say "set     SANDBOX_HOSTS=${hosts:+$hosts,}$sandbox_host"
	;;
esac

setvar() {
	if [ "$(current "$1")" = "$2" ]; then
		say "ok      $1=$2"
	else
		ASB_SETUP_VALUE=$(envvalue "$2")
		export ASB_SETUP_VALUE
		put "$1"
		unset ASB_SETUP_VALUE
		say "set     $1=$2"
	fi
}
setvar SSH_KEY_FILE "$key"
setvar SSH_KNOWN_HOSTS "$known"
if [ -n "$msb" ]; then
	setvar MSB_PATH "$msb"
fi

if [ "$changed" = 0 ]; then
	say "Nothing to do: everything was already set up."
else
	say "Done. Next: asb doctor, then make run or docker compose up -d (docs/self-hosting.md)."
fi
