// Package migrations holds asb's forward-only, numbered SQL migrations.
// Files are named NNNN_description.sql and applied in order, each once,
// each in its own transaction (see app/sqlite).
package migrations

import "embed"

// FS holds every migration file.
//
//go:embed *.sql
var FS embed.FS
