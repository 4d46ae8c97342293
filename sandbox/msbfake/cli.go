package main

import (
	"fmt"
	"strings"
)

// flagSpec describes one clap option of a subcommand.
type flagSpec struct {
	long    string   // canonical long name without dashes
	short   byte     // short letter, 0 if none
	aliases []string // extra long names (hidden aliases)
	value   string   // value placeholder; empty means a boolean switch
	multi   bool     // may be repeated
}

func (f flagSpec) takesValue() bool { return f.value != "" }

// display renders the flag the way clap names it in errors: `--name <NAME>`.
func (f flagSpec) display() string {
	if f.takesValue() {
		return fmt.Sprintf("--%s <%s>", f.long, f.value)
	}
	return "--" + f.long
}

// cmdSpec describes the argv grammar of one subcommand.
type cmdSpec struct {
	name      string
	flags     []flagSpec
	maxPos    int  // positional arguments allowed before `--`; -1 = unlimited
	trailing  bool // everything after `--` is a command (run, exec)
	conflicts [][2]string
}

// globalFlags are accepted everywhere (clap `global = true`).
var globalFlags = []flagSpec{
	{long: "tree"}, {long: "error"}, {long: "warn"}, {long: "info"}, {long: "debug"}, {long: "trace"},
}

// parsedArgs is the result of parsing one subcommand's argv.
type parsedArgs struct {
	cmd     string
	vals    map[string][]string // canonical long name → values ("" for switches)
	order   []string            // canonical names in the order they appeared
	pos     []string
	command []string // argv after `--`
	dashes  bool     // `--` was present
}

func (p *parsedArgs) has(name string) bool { _, ok := p.vals[name]; return ok }

func (p *parsedArgs) get(name string) string {
	v := p.vals[name]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func (p *parsedArgs) all(name string) []string { return p.vals[name] }

// parse applies spec to args the way clap would: options may appear anywhere
// before `--`, long options accept `--x=v` and `--x v`, short options accept
// `-xv`, `-x=v`, `-x v` and bundles of switches (`-dq`).
func (spec cmdSpec) parse(args []string) (*parsedArgs, error) {
	p := &parsedArgs{cmd: spec.name, vals: map[string][]string{}}
	all := append(append([]flagSpec{}, spec.flags...), globalFlags...)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if !spec.trailing {
				p.pos = append(p.pos, args[i+1:]...)
			} else {
				p.command = append([]string{}, args[i+1:]...)
				p.dashes = true
			}
			i = len(args)
		case strings.HasPrefix(a, "--") && len(a) > 2:
			n, err := spec.parseLong(p, all, args, i)
			if err != nil {
				return nil, err
			}
			i = n
		case strings.HasPrefix(a, "-") && len(a) > 1:
			n, err := spec.parseShort(p, all, args, i)
			if err != nil {
				return nil, err
			}
			i = n
		default:
			p.pos = append(p.pos, a)
		}
	}
	if spec.maxPos >= 0 && len(p.pos) > spec.maxPos {
		return nil, usageErr(spec.name, "unexpected argument '%s' found", p.pos[spec.maxPos])
	}
	for _, c := range spec.conflicts {
		if p.has(c[0]) && p.has(c[1]) {
			return nil, usageErr(spec.name, "the argument '%s' cannot be used with '%s'",
				spec.lookupLong(all, c[0]).display(), spec.lookupLong(all, c[1]).display())
		}
	}
	return p, nil
}

func (spec cmdSpec) lookupLong(all []flagSpec, name string) flagSpec {
	for _, f := range all {
		if f.long == name {
			return f
		}
		for _, al := range f.aliases {
			if al == name {
				return f
			}
		}
	}
	return flagSpec{}
}

func (spec cmdSpec) parseLong(p *parsedArgs, all []flagSpec, args []string, i int) (int, error) {
	body := args[i][2:]
	name, val, hasVal := strings.Cut(body, "=")
	f := spec.lookupLong(all, name)
	if f.long == "" {
		return 0, usageErr(spec.name, "unexpected argument '--%s' found", name)
	}
	if !f.takesValue() {
		if hasVal {
			return 0, usageErr(spec.name, "unexpected value '%s' for '%s' found; no more were expected", val, f.display())
		}
		return i, p.add(spec, f, "")
	}
	if !hasVal {
		if i+1 >= len(args) {
			return 0, usageErr(spec.name, "a value is required for '%s' but none was supplied", f.display())
		}
		i++
		val = args[i]
	}
	return i, p.add(spec, f, val)
}

func (spec cmdSpec) parseShort(p *parsedArgs, all []flagSpec, args []string, i int) (int, error) {
	body := args[i][1:]
	for j := 0; j < len(body); j++ {
		f := flagSpec{}
		for _, c := range all {
			if c.short != 0 && c.short == body[j] {
				f = c
			}
		}
		if f.long == "" {
			return 0, usageErr(spec.name, "unexpected argument '-%c' found", body[j])
		}
		if !f.takesValue() {
			if err := p.add(spec, f, ""); err != nil {
				return 0, err
			}
			continue
		}
		rest := strings.TrimPrefix(body[j+1:], "=")
		if rest == "" && j+1 == len(body) {
			if i+1 >= len(args) {
				return 0, usageErr(spec.name, "a value is required for '-%c <%s>' but none was supplied", f.short, f.value)
			}
			i++
			rest = args[i]
		}
		return i, p.add(spec, f, rest)
	}
	return i, nil
}

func (p *parsedArgs) add(spec cmdSpec, f flagSpec, v string) error {
	if _, seen := p.vals[f.long]; seen && !f.multi {
		return usageErr(spec.name, "the argument '%s' cannot be used multiple times", f.display())
	}
	p.vals[f.long] = append(p.vals[f.long], v)
	p.order = append(p.order, f.long)
	return nil
}

// wantsHelp reports whether -h/--help appears before `--`.
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "-h" || a == "--help" {
			return true
		}
	}
	return false
}
