// Package asb holds files of the repository root that the binary embeds.
package asb

import _ "embed"

// AppManifest is app-manifest.yml: the GitHub App that GET /setup asks
// GitHub to create.
//
//go:embed app-manifest.yml
var AppManifest []byte
