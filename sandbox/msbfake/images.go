package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
)

// imageDigest is a stable fake manifest digest for a normalised reference.
func imageDigest(ref string) string {
	sum := sha256.Sum256([]byte("msbfake-image:" + ref))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (a *app) findImage(ref string) *Image {
	for _, im := range a.st.Images {
		if im.Reference == ref {
			return im
		}
	}
	return nil
}

// pullImage simulates a registry pull into the cache.
func (a *app) pullImage(given, ref string) error {
	if a.knobs.matches(knobUnreachable, given, ref) {
		return fmt.Errorf("image error: failed to pull %s: error sending request for url (https://registry.invalid/v2/): registry unreachable", ref)
	}
	if im := a.findImage(ref); im != nil {
		im.PulledAt = a.now
		return nil
	}
	a.st.Images = append(a.st.Images, &Image{Reference: ref, Digest: imageDigest(ref), SizeBytes: 7 << 20, PulledAt: a.now})
	return nil
}

// ensureImage applies the pull policy to IMAGE and returns its normalised
// reference ("" for a local rootfs path).
func (a *app) ensureImage(image, policy string) (string, error) {
	if isLocalPath(image) {
		if _, err := os.Stat(image); err != nil {
			return "", fmt.Errorf("image error: rootfs path does not exist: %s", image)
		}
		return "", nil
	}
	ref, err := normalizeImageRef(image)
	if err != nil {
		return "", err
	}
	cached := a.findImage(ref) != nil
	switch {
	case policy == "never" && !cached:
		return "", fmt.Errorf("image error: image not cached: %s", ref)
	case policy == "always" || !cached && policy != "never":
		if err := a.pullImage(image, ref); err != nil {
			return "", err
		}
	}
	return ref, nil
}

// cmdPull implements `msb pull REF`: the supported way to pre-cache an image
// so that `--pull never` works.
func cmdPull(args []string) error {
	p, err := pullSpec.parse(args)
	if err != nil {
		return err
	}
	if len(p.pos) == 0 {
		return usageErr("pull", "the following required arguments were not provided:\n  <REFERENCE>")
	}
	given := p.pos[0]
	ref, err := normalizeImageRef(given)
	if err != nil {
		return err
	}
	a, err := newApp()
	if err != nil {
		return err
	}
	err = a.locked(func() error { return a.pullImage(given, ref) })
	if err == nil && !p.has("quiet") {
		progressLine("✓", "Pulled", ref)
	}
	return err
}

var imageSpec = cmdSpec{name: "image", maxPos: -1, flags: []flagSpec{
	{long: "format", value: "FORMAT"}, {long: "quiet", short: 'q'}, {long: "force", short: 'f'}, {long: "yes", short: 'y'},
}}

// cmdImage implements `image ls|list|rm|remove|inspect|prune`.
func cmdImage(args []string) error {
	if len(args) == 0 {
		return usageErr("image", "a subcommand is required")
	}
	sub, rest := args[0], args[1:]
	p, err := imageSpec.parse(rest)
	if err != nil {
		return err
	}
	a, err := newApp()
	if err != nil {
		return err
	}
	switch sub {
	case "ls", "list":
		return a.locked(func() error { return a.imageList(p) })
	case "rm", "remove":
		return a.locked(func() error { return a.imageRemove(p) })
	case "inspect":
		return a.locked(func() error { return a.imageInspect(p) })
	case "prune":
		return a.locked(func() error { a.st.Images = nil; return nil })
	}
	return usageErr("image", "unrecognized subcommand '%s'", sub)
}

type imageJSON struct {
	Reference    string `json:"reference"`
	Digest       string `json:"digest"`
	SizeBytes    int64  `json:"size_bytes"`
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	LayerCount   int    `json:"layer_count"`
	CreatedAt    string `json:"created_at"`
}

func (a *app) imageJSON(im *Image) imageJSON {
	return imageJSON{Reference: im.Reference, Digest: im.Digest, SizeBytes: im.SizeBytes,
		Architecture: "amd64", OS: "linux", LayerCount: 1, CreatedAt: rfc3339(im.PulledAt)}
}

func (a *app) imageList(p *parsedArgs) error {
	ims := append([]*Image{}, a.st.Images...)
	sort.Slice(ims, func(i, j int) bool { return ims[i].Reference < ims[j].Reference })
	if p.has("quiet") {
		for _, im := range ims {
			fmt.Println(im.Reference)
		}
		return nil
	}
	if p.has("format") {
		if err := checkFormat(p); err != nil {
			return err
		}
		out := []imageJSON{}
		for _, im := range ims {
			out = append(out, a.imageJSON(im))
		}
		return printJSON(out)
	}
	if len(ims) == 0 {
		fmt.Fprintln(os.Stderr, "No images found.")
		return nil
	}
	rows := [][]string{{"REFERENCE", "DIGEST", "SIZE"}}
	for _, im := range ims {
		rows = append(rows, []string{im.Reference, im.Digest[:19], formatBytes(uint64(im.SizeBytes))})
	}
	printTable(rows)
	return nil
}

func (a *app) imageRemove(p *parsedArgs) error {
	failed := false
	for _, given := range p.pos {
		ref, err := normalizeImageRef(given)
		if err == nil && a.findImage(ref) == nil {
			err = fmt.Errorf("image error: image not found: %s", given)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "error: %s\n", err)
			failed = true
			continue
		}
		out := a.st.Images[:0]
		for _, im := range a.st.Images {
			if im.Reference != ref {
				out = append(out, im)
			}
		}
		a.st.Images = out
		if !p.has("quiet") {
			progressLine("✓", "Removed", ref)
		}
	}
	if failed {
		return exitCode(1)
	}
	return nil
}

func (a *app) imageInspect(p *parsedArgs) error {
	if len(p.pos) != 1 {
		return usageErr("image inspect", "the following required arguments were not provided:\n  <REFERENCE>")
	}
	ref, err := normalizeImageRef(p.pos[0])
	if err != nil {
		return err
	}
	im := a.findImage(ref)
	if im == nil {
		return fmt.Errorf("image error: image not found: %s", strings.TrimSpace(p.pos[0]))
	}
	return printJSON(a.imageJSON(im))
}
