package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

var snapshotSpec = cmdSpec{name: "snapshot", maxPos: -1, flags: []flagSpec{
	{long: "from", value: "SANDBOX"}, {long: "dest-dir", value: "DEST_DIR"},
	{long: "label", value: "LABEL", multi: true}, {long: "force", short: 'f'},
	{long: "integrity"}, {long: "resumable"}, {long: "quiet", short: 'q'},
	{long: "format", value: "FORMAT"}, {long: "verify"},
}}

// cmdSnapshot implements `snapshot create|ls|rm|inspect`.
func cmdSnapshot(args []string) error {
	if len(args) == 0 {
		return usageErr("snapshot", "a subcommand is required")
	}
	sub := args[0]
	p, err := snapshotSpec.parse(args[1:])
	if err != nil {
		return err
	}
	p.cmd = "snapshot " + sub
	a, err := newApp()
	if err != nil {
		return err
	}
	switch sub {
	case "create":
		return a.snapshotCreate(p)
	case "list", "ls":
		return a.locked(func() error { return a.snapshotList(p) })
	case "remove", "rm":
		return a.locked(func() error { return a.snapshotRemove(p) })
	case "inspect":
		return a.locked(func() error { return a.snapshotInspect(p) })
	}
	return usageErr("snapshot", "unrecognized subcommand '%s'", sub)
}

func (a *app) snapshotCreate(p *parsedArgs) error {
	if len(p.pos) != 1 || !p.has("from") {
		return usageErr("snapshot create", "the following required arguments were not provided:\n  <NAME>\n  --from <SANDBOX>")
	}
	if p.has("resumable") {
		return fmt.Errorf("resumable snapshots are not supported by this runtime")
	}
	name := p.pos[0]
	if err := validateName(name); err != nil {
		return err
	}
	var snap *Snapshot
	err := a.locked(func() error {
		var err error
		snap, err = a.snapshotFrom(name, p)
		return err
	})
	if err == nil && !p.has("quiet") {
		fmt.Println(snap.Digest)
		fmt.Println(snap.Path)
	}
	return err
}

func (a *app) snapshotFrom(name string, p *parsedArgs) (*Snapshot, error) {
	b, err := a.box(p.get("from"))
	if err != nil {
		return nil, err
	}
	if b.Status == statusRunning {
		return nil, fmt.Errorf("snapshot source sandbox '%s' is not stopped", b.Name)
	}
	if old := a.snapshotByName(name); old != nil {
		if !p.has("force") {
			return nil, fmt.Errorf("snapshot already exists: %s", name)
		}
		a.dropSnapshot(old)
	}
	dir := filepath.Join(a.home, "snapshots", name)
	if p.has("dest-dir") {
		d, err := filepath.Abs(p.get("dest-dir"))
		if err != nil {
			return nil, err
		}
		dir = filepath.Join(d, name)
	}
	if err := removeTree(dir); err != nil {
		return nil, err
	}
	src := a.boxRoot(b.Name)
	fi, err := os.Stat(src)
	if err != nil {
		return nil, fmt.Errorf("sandbox '%s' has no root filesystem", b.Name)
	}
	c := &copier{src: hostFS{}, dst: hostFS{}}
	if err := c.copyEntry(src, filepath.Join(dir, "root"), fi); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", name, err)
	}
	size := dirUsage(filepath.Join(dir, "root"))
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%s|%d|%s", name, b.Name, b.Image, size, rfc3339(a.now))))
	snap := &Snapshot{Name: name, Digest: "sha256:" + hex.EncodeToString(sum[:]), Image: b.Image, ImageRef: b.ImageRef,
		Path: dir, SizeBytes: int64(size), CreatedAt: a.now, Labels: map[string]string{}, Source: b.Name, Config: b.Config}
	for _, l := range p.all("label") {
		k, v, _ := strings.Cut(l, "=")
		snap.Labels[k] = v
	}
	a.st.Snapshots = append(a.st.Snapshots, snap)
	return snap, nil
}

func (a *app) snapshotByName(name string) *Snapshot {
	for _, s := range a.st.Snapshots {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// findSnapshot resolves a path, name or digest (as `run --from-snapshot` does).
func (a *app) findSnapshot(ref string) (*Snapshot, error) {
	for _, s := range a.st.Snapshots {
		if s.Name == ref || s.Digest == ref || strings.TrimPrefix(s.Digest, "sha256:") == ref {
			return s, nil
		}
		if abs, err := filepath.Abs(ref); err == nil && abs == s.Path {
			return s, nil
		}
	}
	return nil, fmt.Errorf("snapshot not found: %s", ref)
}

// ensureSnapshotImage checks the snapshot's base image against the policy.
func (a *app) ensureSnapshotImage(s *Snapshot, policy string) (string, error) {
	if s.ImageRef == "" {
		return "", nil
	}
	if a.findImage(s.ImageRef) != nil {
		return s.ImageRef, nil
	}
	if policy == "never" {
		return "", fmt.Errorf("snapshot integrity check failed: snapshot base image %s is not cached locally and pull policy is `never`; pull %s first", imageDigest(s.ImageRef), s.ImageRef)
	}
	return s.ImageRef, a.pullImage(s.Image, s.ImageRef)
}

func (a *app) dropSnapshot(s *Snapshot) {
	out := a.st.Snapshots[:0]
	for _, x := range a.st.Snapshots {
		if x != s {
			out = append(out, x)
		}
	}
	a.st.Snapshots = out
	_ = removeTree(s.Path)
}

// snapshotJSON is one element of `snapshot ls --format json`.
type snapshotJSON struct {
	Digest                   string  `json:"digest"`
	Name                     string  `json:"name"`
	ParentDigest             *string `json:"parent_digest"`
	Scope                    string  `json:"scope"`
	StateKind                string  `json:"state_kind"`
	ImageRef                 string  `json:"image_ref"`
	Format                   string  `json:"format"`
	Fstype                   string  `json:"fstype"`
	CheckpointManifestDigest *string `json:"checkpoint_manifest_digest"`
	SizeBytes                int64   `json:"size_bytes"`
	Locality                 string  `json:"locality"`
	Availability             string  `json:"availability"`
	MigrationState           string  `json:"migration_state"`
	MigrationErrorCode       *string `json:"migration_error_code"`
	CreatedAt                string  `json:"created_at"`
	ArtifactPath             string  `json:"artifact_path"`
}

func snapshotOf(s *Snapshot) snapshotJSON {
	return snapshotJSON{Digest: s.Digest, Name: s.Name, Scope: "local", StateKind: "disk", ImageRef: s.Image,
		Format: "raw", Fstype: "ext4", SizeBytes: s.SizeBytes, Locality: "local", Availability: "available",
		MigrationState: "none", CreatedAt: rfc3339(s.CreatedAt), ArtifactPath: s.Path}
}

func (a *app) snapshotList(p *parsedArgs) error {
	snaps := append([]*Snapshot{}, a.st.Snapshots...)
	sort.Slice(snaps, func(i, j int) bool { return snaps[i].CreatedAt.After(snaps[j].CreatedAt) })
	if p.has("quiet") {
		for _, s := range snaps {
			fmt.Println(s.Digest)
		}
		return nil
	}
	if p.has("format") {
		if err := checkFormat(p); err != nil {
			return err
		}
		out := []snapshotJSON{}
		for _, s := range snaps {
			out = append(out, snapshotOf(s))
		}
		return printJSON(out)
	}
	if len(snaps) == 0 {
		fmt.Fprintln(os.Stderr, "No snapshots indexed.")
		return nil
	}
	rows := [][]string{{"NAME", "SCOPE", "MIGRATION", "IMAGE", "SIZE", "CREATED", "DIGEST"}}
	for _, s := range snaps {
		t := s.CreatedAt
		rows = append(rows, []string{s.Name, "local", "none", s.Image, formatBytes(uint64(s.SizeBytes)), localTime(&t), s.Digest[:19]})
	}
	printTable(rows)
	return nil
}

func (a *app) snapshotRemove(p *parsedArgs) error {
	if len(p.pos) == 0 {
		return usageErr("snapshot remove", "the following required arguments were not provided:\n  <SNAPSHOT>...")
	}
	failed := false
	for _, ref := range p.pos {
		s, err := a.findSnapshot(ref)
		if err != nil {
			fmt.Fprintf(os.Stderr, "error: %s\n", err)
			failed = true
			continue
		}
		a.dropSnapshot(s)
		if !p.has("quiet") {
			progressLine("✓", "Removed", s.Name)
		}
	}
	if failed {
		return exitCode(1)
	}
	return nil
}

func (a *app) snapshotInspect(p *parsedArgs) error {
	if len(p.pos) != 1 {
		return usageErr("snapshot inspect", "the following required arguments were not provided:\n  <SNAPSHOT>")
	}
	s, err := a.findSnapshot(p.pos[0])
	if err != nil {
		return err
	}
	return printJSON(snapshotOf(s))
}
