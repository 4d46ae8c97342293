package main

import (
	"fmt"
	"net/netip"
	"strings"
)

// NetRule is one parsed --net-rule token.
type NetRule struct {
	Action    string `json:"action"`    // allow | deny
	Direction string `json:"direction"` // egress | ingress | any
	Target    string `json:"target"`
	Kind      string `json:"kind"` // any dns group ipv4 ipv6 cidr domain suffix
	Proto     string `json:"proto"`
	Ports     string `json:"ports"`
}

// Network is the stored network policy (not enforced beyond --no-net).
type Network struct {
	Profiles       []string  `json:"profiles"`
	DefaultEgress  string    `json:"default_egress"`
	DefaultIngress string    `json:"default_ingress"`
	Rules          []NetRule `json:"rules"`
	DNSRebind      bool      `json:"dns_rebind_protection"`
	DNSNameservers []string  `json:"dns_nameservers"`
}

// isolated reports whether the policy allows nothing at all, in which case
// the box gets its own empty network namespace.
func (n Network) isolated() bool {
	if n.DefaultEgress != "deny" || n.DefaultIngress != "deny" {
		return false
	}
	for _, r := range n.Rules {
		if r.Action == "allow" {
			return false
		}
	}
	return true
}

var netGroups = map[string]bool{"public": true, "private": true, "loopback": true, "link-local": true, "meta": true, "multicast": true, "host": true}

// parseNetRules parses one --net-rule value (comma-separated tokens) with the
// grammar of crates/cli/lib/net_rule.rs.
func parseNetRules(value string) ([]NetRule, error) {
	var out []NetRule
	for _, tok := range splitRuleTokens(value) {
		r, err := parseNetRule(strings.TrimSpace(tok))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// splitRuleTokens splits on commas outside IPv6 brackets.
func splitRuleTokens(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func parseNetRule(tok string) (NetRule, error) {
	head, tail, ok := strings.Cut(tok, "@")
	if !ok || tail == "" {
		return NetRule{}, fmt.Errorf("invalid network rule `%s`: expected <action>[:<direction>]@<target>[:<proto>[:<ports>]]", tok)
	}
	r := NetRule{Direction: "egress", Proto: "any", Ports: "any"}
	action, dir, hasDir := strings.Cut(head, ":")
	if action != "allow" && action != "deny" {
		return NetRule{}, fmt.Errorf("invalid network rule `%s`: unknown action `%s` (expected `allow` or `deny`)", tok, action)
	}
	r.Action = action
	if hasDir {
		if dir != "egress" && dir != "ingress" && dir != "any" {
			return NetRule{}, fmt.Errorf("invalid network rule `%s`: unknown direction `%s` (expected `egress`, `ingress` or `any`)", tok, dir)
		}
		r.Direction = dir
	}
	target, rest, err := splitTarget(tok, tail)
	if err != nil {
		return NetRule{}, err
	}
	if err := r.setTarget(tok, target); err != nil {
		return NetRule{}, err
	}
	if err := r.setProtoPorts(tok, target, rest); err != nil {
		return NetRule{}, err
	}
	return r, r.checkDNS(tok)
}

// splitTarget separates the target from `:proto[:ports]`, honouring brackets.
func splitTarget(tok, tail string) (string, []string, error) {
	if strings.HasPrefix(tail, "[") {
		end := strings.Index(tail, "]")
		if end < 0 {
			return "", nil, fmt.Errorf("invalid network rule `%s`: unterminated `[`", tok)
		}
		target, after := tail[:end+1], tail[end+1:]
		if after == "" {
			return target, nil, nil
		}
		if !strings.HasPrefix(after, ":") {
			return "", nil, fmt.Errorf("invalid network rule `%s`: unexpected `%s` after target", tok, after)
		}
		return target, strings.Split(after[1:], ":"), nil
	}
	parts := strings.Split(tail, ":")
	return parts[0], parts[1:], nil
}

func (r *NetRule) setTarget(tok, t string) error {
	r.Target = t
	switch {
	case t == "any" || t == "dns":
		r.Kind = t
	case netGroups[t]:
		r.Kind = "group"
	case strings.HasPrefix(t, "domain="):
		r.Kind = "domain"
		return checkHostname(tok, strings.TrimPrefix(t, "domain="), true)
	case strings.HasPrefix(t, "suffix="):
		r.Kind = "suffix"
		return checkHostname(tok, strings.TrimPrefix(t, "suffix="), true)
	case strings.HasPrefix(t, "*."):
		r.Kind = "suffix"
		return checkHostname(tok, t[2:], true)
	case strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]"):
		inner := t[1 : len(t)-1]
		if _, err := netip.ParseAddr(inner); err == nil && isIPv6(inner) {
			r.Kind = "ipv6"
			return nil
		}
		if p, err := netip.ParsePrefix(inner); err == nil && p.Addr().Is6() {
			r.Kind = "cidr"
			return nil
		}
		return fmt.Errorf("invalid network rule `%s`: `%s` is not an IPv6 address or CIDR", tok, t)
	case isIPv4(t):
		r.Kind = "ipv4"
	case strings.Contains(t, "/"):
		if p, err := netip.ParsePrefix(t); err == nil && p.Addr().Is4() {
			r.Kind = "cidr"
			return nil
		}
		return fmt.Errorf("invalid network rule `%s`: `%s` is not a valid CIDR", tok, t)
	case t == "":
		return fmt.Errorf("invalid network rule `%s`: missing target", tok)
	case !strings.Contains(t, "."):
		return fmt.Errorf("invalid network rule `%s`: `%s` is ambiguous; use `domain=%s` for a single-label host name", tok, t, t)
	default:
		r.Kind = "domain"
		return checkHostname(tok, t, false)
	}
	return nil
}

func checkHostname(tok, h string, allowSingle bool) error {
	if h == "" || len(h) > 253 || (!allowSingle && !strings.Contains(h, ".")) {
		return fmt.Errorf("invalid network rule `%s`: invalid domain `%s`", tok, h)
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("invalid network rule `%s`: invalid domain `%s`", tok, h)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("invalid network rule `%s`: invalid domain `%s`", tok, h)
			}
		}
	}
	return nil
}

func (r *NetRule) setProtoPorts(tok, target string, rest []string) error {
	if len(rest) > 2 {
		return fmt.Errorf("invalid network rule `%s`: too many `:`-separated fields", tok)
	}
	if len(rest) >= 1 {
		p := rest[0]
		if _, err := parseRustUint(p, 16); err == nil {
			return fmt.Errorf("`%s` is a port, not a protocol; did you mean `%s:tcp:%s`?", p, target, p)
		}
		switch p {
		case "any", "tcp", "udp", "icmpv4", "icmpv6":
			r.Proto = p
		default:
			return fmt.Errorf("invalid network rule `%s`: unknown protocol `%s` (expected `any`, `tcp`, `udp`, `icmpv4` or `icmpv6`)", tok, p)
		}
	}
	if len(rest) == 2 {
		if err := checkPorts(tok, rest[1]); err != nil {
			return err
		}
		if strings.HasPrefix(r.Proto, "icmp") && rest[1] != "any" {
			return fmt.Errorf("invalid network rule `%s`: ports are not valid for `%s`", tok, r.Proto)
		}
		r.Ports = rest[1]
	}
	return nil
}

func checkPorts(tok, ports string) error {
	if ports == "any" {
		return nil
	}
	lo, hi, isRange := strings.Cut(ports, "-")
	l, err1 := parsePortNumber(lo)
	h := l
	var err2 error
	if isRange {
		h, err2 = parsePortNumber(hi)
	}
	if err1 != nil || err2 != nil || h < l {
		return fmt.Errorf("invalid network rule `%s`: invalid port range `%s`", tok, ports)
	}
	return nil
}

// checkDNS enforces that `dns` (gateway UDP+TCP/53) is egress-only.
func (r *NetRule) checkDNS(tok string) error {
	if r.Kind != "dns" {
		return nil
	}
	if r.Direction != "egress" {
		return fmt.Errorf("invalid network rule `%s`: the `dns` target is egress-only", tok)
	}
	if r.Proto != "any" && r.Proto != "tcp" && r.Proto != "udp" {
		return fmt.Errorf("the `dns` target supports `tcp`, `udp`, or `any`, not `%s`", r.Proto)
	}
	if r.Ports != "any" && r.Ports != "53" {
		return fmt.Errorf("invalid network rule `%s`: the `dns` target is always port 53", tok)
	}
	return nil
}

func isIPv4(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is4()
}

func isIPv6(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6() && !a.Is4In6()
}

// profileRules returns the policy of `--net P[,P]` (from_profiles).
func profileNetwork(profiles []string) Network {
	n := Network{Profiles: profiles, DefaultEgress: "deny", DefaultIngress: "allow", DNSRebind: true}
	if len(profiles) == 1 && profiles[0] == "all" {
		n.DefaultEgress, n.DefaultIngress = "allow", "allow"
		return n
	}
	if len(profiles) == 1 && profiles[0] == "none" {
		n.DefaultEgress, n.DefaultIngress = "deny", "deny"
		return n
	}
	n.Rules = append(n.Rules, NetRule{Action: "allow", Direction: "egress", Target: "dns", Kind: "dns", Proto: "any", Ports: "any"})
	for _, p := range profiles {
		n.Rules = append(n.Rules, NetRule{Action: "allow", Direction: "egress", Target: p, Kind: "group", Proto: "any", Ports: "any"})
	}
	return n
}

// parseProfiles validates the values of the repeatable --net flag.
func parseProfiles(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			switch p {
			case "public", "private", "host", "all", "none":
				out = append(out, p)
			default:
				return nil, fmt.Errorf("invalid network profile '%s' (expected: public, private, host, all, none)", p)
			}
		}
	}
	for _, p := range out {
		if (p == "all" || p == "none") && len(out) > 1 {
			return nil, fmt.Errorf("network profile '%s' cannot be combined with other profiles", p)
		}
	}
	return out, nil
}

func parseNetDefault(flag, v string) (string, error) {
	if v != "allow" && v != "deny" {
		return "", fmt.Errorf("invalid value '%s' for '--%s': expected `allow` or `deny`", v, flag)
	}
	return v, nil
}

// buildNetwork composes the policy like build_network_policy /
// apply_network_opts (msb.md §2.4).
func buildNetwork(p *parsedArgs) (Network, error) {
	var rules []NetRule
	for _, v := range p.all("net-rule") {
		rs, err := parseNetRules(v)
		if err != nil {
			return Network{}, err
		}
		rules = append(rules, rs...)
	}
	var n Network
	switch {
	case p.has("net"):
		profiles, err := parseProfiles(p.all("net"))
		if err != nil {
			return Network{}, err
		}
		n = profileNetwork(profiles)
		n.Rules = append(rules, n.Rules...)
	case p.has("no-net"):
		n = Network{Profiles: []string{}, DefaultEgress: "deny", DefaultIngress: "deny", Rules: rules, DNSRebind: true}
	case p.has("net-default") || p.has("net-default-egress") || p.has("net-default-ingress"):
		n = Network{Profiles: []string{}, DefaultEgress: "deny", DefaultIngress: "allow", Rules: rules, DNSRebind: true}
		if err := applyDefaults(p, &n); err != nil {
			return Network{}, err
		}
	default:
		n = profileNetwork([]string{"public"})
		n.Rules = append(rules, n.Rules...)
	}
	if n.Rules == nil {
		n.Rules = []NetRule{}
	}
	n.DNSRebind = !p.has("no-dns-rebind-protection")
	n.DNSNameservers = append([]string{}, p.all("dns-nameserver")...)
	return n, nil
}

func applyDefaults(p *parsedArgs, n *Network) error {
	if p.has("net-default") {
		v, err := parseNetDefault("net-default", p.get("net-default"))
		if err != nil {
			return err
		}
		n.DefaultEgress, n.DefaultIngress = v, v
	}
	if p.has("net-default-egress") {
		v, err := parseNetDefault("net-default-egress", p.get("net-default-egress"))
		if err != nil {
			return err
		}
		n.DefaultEgress = v
	}
	if p.has("net-default-ingress") {
		v, err := parseNetDefault("net-default-ingress", p.get("net-default-ingress"))
		if err != nil {
			return err
		}
		n.DefaultIngress = v
	}
	return nil
}
