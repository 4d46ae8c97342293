package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// lsEntry is one element of `ls --format json`: exactly these four fields.
type lsEntry struct {
	Name      string  `json:"name"`
	Status    string  `json:"status"`
	CreatedAt *string `json:"created_at"`
	Image     string  `json:"image"`
}

// cmdList implements `msb list|ls`.
func cmdList(args []string) error {
	p, err := listSpec.parse(args)
	if err != nil {
		return err
	}
	if p.has("format") {
		if err := checkFormat(p); err != nil {
			return err
		}
	}
	a, err := newApp()
	if err != nil {
		return err
	}
	return a.locked(func() error { return a.list(p) })
}

func (a *app) list(p *parsedArgs) error {
	var boxes []*Sandbox
	for _, b := range a.sortedBoxes() { // newest first
		switch {
		case p.has("running") && b.Status != statusRunning:
		case p.has("stopped") && b.Status != statusStopped:
		case !matchLabels(b, p.all("label")):
		default:
			boxes = append(boxes, b)
		}
	}
	if p.has("format") {
		out := []lsEntry{}
		for _, b := range boxes {
			created := rfc3339(b.CreatedAt)
			out = append(out, lsEntry{Name: b.Name, Status: b.Status, CreatedAt: &created, Image: b.Image})
		}
		return printJSON(out)
	}
	if p.has("quiet") {
		for _, b := range boxes {
			fmt.Println(b.Name)
		}
		return nil
	}
	if len(boxes) == 0 {
		fmt.Fprintln(os.Stderr, "No sandboxes found.")
		return nil
	}
	rows := [][]string{{"NAME", "IMAGE", "STATUS", "CREATED"}}
	for _, b := range boxes {
		t := b.CreatedAt
		rows = append(rows, []string{b.Name, b.Image, strings.ToLower(b.Status), localTime(&t)})
	}
	printTable(rows)
	return nil
}

// psEntry is the 0.6.9 `status --format json` object.
type psEntry struct {
	Name         string   `json:"name"`
	Status       string   `json:"status"`
	Image        string   `json:"image"`
	Command      string   `json:"command"`
	Cpus         int      `json:"cpus"`
	MaxCpus      int      `json:"max_cpus"`
	MemoryMiB    int      `json:"memory_mib"`
	MaxMemoryMiB int      `json:"max_memory_mib"`
	Thp          string   `json:"thp"`
	Ports        []string `json:"ports"`
}

func psOf(b *Sandbox) psEntry {
	e := psEntry{Name: b.Name, Status: b.Status, Image: b.Image, Command: commandString(b),
		Cpus: b.Config.Cpus, MaxCpus: b.Config.MaxCpus, MemoryMiB: b.Config.MemoryMiB,
		MaxMemoryMiB: b.Config.MaxMemoryMiB, Thp: b.Config.Thp, Ports: []string{}}
	for _, pt := range b.Config.Ports {
		e.Ports = append(e.Ports, pt.String())
	}
	return e
}

// commandString is entrypoint+cmd joined and wrapped in literal quotes, or "-".
func commandString(b *Sandbox) string {
	parts := append(append([]string{}, b.Config.Entrypoint...), b.Config.Cmd...)
	if len(parts) == 0 {
		parts = imageCmd
	}
	return "\"" + strings.Join(parts, " ") + "\""
}

// cmdStatus implements `msb status|ps [NAME]`.
func cmdStatus(args []string) error {
	p, err := statusSpec.parse(args)
	if err != nil {
		return err
	}
	if len(p.pos) > 0 && (p.has("all") || p.has("label")) {
		return usageErr("status", "the argument '[NAME]' cannot be used with '--all'")
	}
	if p.has("format") {
		if err := checkFormat(p); err != nil {
			return err
		}
	}
	a, err := newApp()
	if err != nil {
		return err
	}
	return a.locked(func() error { return a.status(p) })
}

func (a *app) status(p *parsedArgs) error {
	var boxes []*Sandbox
	if len(p.pos) == 1 {
		b, err := a.box(p.pos[0])
		if err != nil {
			return err
		}
		if p.has("format") {
			return printJSON(psOf(b))
		}
		boxes = []*Sandbox{b}
	} else {
		for _, b := range a.st.Sandboxes {
			if (p.has("all") || b.Status == statusRunning) && matchLabels(b, p.all("label")) {
				boxes = append(boxes, b)
			}
		}
		sort.Slice(boxes, func(i, j int) bool { return boxes[i].Name < boxes[j].Name })
	}
	if p.has("format") {
		out := []psEntry{}
		for _, b := range boxes {
			out = append(out, psOf(b))
		}
		return printJSON(out)
	}
	return printStatusTable(p, boxes)
}

func printStatusTable(p *parsedArgs, boxes []*Sandbox) error {
	if p.has("quiet") {
		for _, b := range boxes {
			fmt.Println(b.Name)
		}
		return nil
	}
	if len(boxes) == 0 {
		if p.has("all") {
			fmt.Fprintln(os.Stderr, "No sandboxes found.")
		} else {
			fmt.Fprintln(os.Stderr, "No running sandboxes.")
		}
		return nil
	}
	rows := [][]string{{"NAME", "IMAGE", "COMMAND", "CPUS", "MEM", "STATUS", "PORTS"}}
	for _, b := range boxes {
		e := psOf(b)
		rows = append(rows, []string{e.Name, truncate(e.Image, 36), truncate(e.Command, 40),
			fmt.Sprintf("%d / %d", e.Cpus, e.MaxCpus),
			fmt.Sprintf("%s / %s", formatMiB(e.MemoryMiB), formatMiB(e.MaxMemoryMiB)),
			strings.ToLower(e.Status), truncate(strings.Join(e.Ports, ", "), 32)})
	}
	printTable(rows)
	return nil
}

// inspectJSON is `msb inspect NAME --format json`.
type inspectJSON struct {
	Name           string      `json:"name"`
	Status         string      `json:"status"`
	Config         configJSON  `json:"config"`
	CreatedAt      string      `json:"created_at"`
	UpdatedAt      string      `json:"updated_at"`
	ActiveConfig   *configJSON `json:"active_config"`
	PendingChanges []any       `json:"pending_changes"`
}

type configJSON struct {
	Spec specJSON `json:"spec"`
}

type specJSON struct {
	Name              string            `json:"name"`
	Image             string            `json:"image"`
	Resources         resourcesJSON     `json:"resources"`
	Runtime           runtimeJSON       `json:"runtime"`
	Env               []EnvVar          `json:"env"`
	Labels            map[string]string `json:"labels"`
	Rlimits           []string          `json:"rlimits"`
	Mounts            []Mount           `json:"mounts"`
	Patches           []Patch           `json:"patches"`
	Network           Network           `json:"network"`
	Ports             []string          `json:"ports"`
	Vsock             []string          `json:"vsock"`
	Init              *string           `json:"init"`
	PullPolicy        string            `json:"pull_policy"`
	SecurityProfile   string            `json:"security_profile"`
	DeploymentProfile string            `json:"deployment_profile"`
	Lifecycle         lifecycleJSON     `json:"lifecycle"`
}

type resourcesJSON struct {
	Cpus         int    `json:"cpus"`
	MemoryMiB    int    `json:"memory_mib"`
	MaxCpus      int    `json:"max_cpus"`
	MaxMemoryMiB int    `json:"max_memory_mib"`
	Thp          string `json:"thp"`
}

type runtimeJSON struct {
	Workdir    *string  `json:"workdir"`
	Shell      string   `json:"shell"`
	User       *string  `json:"user"`
	Entrypoint []string `json:"entrypoint"`
	Cmd        []string `json:"cmd"`
}

type lifecycleJSON struct {
	MaxDurationSecs *uint64 `json:"max_duration_secs"`
	IdleTimeoutSecs *uint64 `json:"idle_timeout_secs"`
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func configOf(b *Sandbox) configJSON {
	c := b.Config
	spec := specJSON{Name: b.Name, Image: b.Image,
		Resources: resourcesJSON{Cpus: c.Cpus, MemoryMiB: c.MemoryMiB, MaxCpus: c.MaxCpus, MaxMemoryMiB: c.MaxMemoryMiB, Thp: c.Thp},
		Runtime: runtimeJSON{Workdir: optString(c.Workdir), Shell: c.Shell, User: optString(c.User),
			Entrypoint: nonNil(c.Entrypoint), Cmd: nonNil(c.Cmd)},
		Env: c.Env, Labels: c.Labels, Rlimits: c.Rlimits, Mounts: c.Mounts, Patches: c.Patches,
		Network: c.Network, Ports: []string{}, Vsock: nonNil(c.Extra["vsock"]), Init: optString(strings.Join(c.Extra["init"], "")),
		PullPolicy: c.PullPolicy, SecurityProfile: c.Security, DeploymentProfile: c.Deployment,
		Lifecycle: lifecycleJSON{MaxDurationSecs: c.MaxDurationSecs, IdleTimeoutSecs: c.IdleTimeoutSecs}}
	for _, pt := range c.Ports {
		spec.Ports = append(spec.Ports, pt.String())
	}
	return configJSON{Spec: spec}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// cmdInspect implements `msb inspect NAME [--format json]`.
func cmdInspect(args []string) error {
	p, err := inspectSpec.parse(args)
	if err != nil {
		return err
	}
	if len(p.pos) == 0 {
		return usageErr("inspect", "the following required arguments were not provided:\n  <NAME>")
	}
	if p.has("format") {
		if err := checkFormat(p); err != nil {
			return err
		}
	}
	a, err := newApp()
	if err != nil {
		return err
	}
	return a.locked(func() error {
		b, err := a.box(p.pos[0])
		if err != nil {
			return err
		}
		out := inspectJSON{Name: b.Name, Status: b.Status, Config: configOf(b), CreatedAt: rfc3339(b.CreatedAt),
			UpdatedAt: rfc3339(b.UpdatedAt), PendingChanges: []any{}}
		if b.Status == statusRunning {
			active := configOf(b)
			out.ActiveConfig = &active
		}
		return printJSON(out) // the fake prints JSON for the table view too
	})
}
