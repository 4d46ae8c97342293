package app

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
)

// Workspaces keeps working trees that callers upload (the IDE's local
// checkout, sent by `asb mcp` with WORKSPACE_DIR) until a delegation ships
// one into a box. A workspace belongs to the account that uploaded it and
// is used at most once.
//
// Contract:
//   - Stage reads a tar stream and keeps the tree for owner, returning a
//     fresh id (NewWorkspaceID). An unsafe or malformed archive is EINVALID,
//     one over the size or entry caps ETOOLARGE; nothing of a refused
//     upload is kept.
//   - Take claims a staged workspace of owner for one delegation and
//     returns its folder on the controller. A missing, expired, already
//     taken or other owner's workspace is ENOTFOUND, so ids do not leak.
//   - Release deletes a workspace, taken or not. Releasing one that is
//     gone is not an error.
//   - Workspaces nobody took or released are deleted after a TTL.
//   - Safe for concurrent use.
type Workspaces interface {
	Stage(ctx context.Context, owner AccountID, r io.Reader) (string, error)
	Take(ctx context.Context, owner AccountID, id string) (localPath string, err error)
	Release(ctx context.Context, id string) error
}

const workspacePrefix = "ws_"

// NewWorkspaceID returns a fresh, unguessable workspace id.
func NewWorkspaceID() string { return randomID(workspacePrefix) }

// CheckWorkspaceID validates a workspace id from outside: a fixed prefix
// and a small charset, so it can never carry a path.
func CheckWorkspaceID(s string) error {
	if !validID(s, workspacePrefix) {
		return Errorf(EINVALID, "workspace id must look like ws_ followed by 1 to 40 lowercase letters or digits (it comes from POST /workspaces)")
	}
	return nil
}

// StageWorkspace keeps an uploaded working tree (a tar stream) for the
// caller and returns its id, which a delegation names in Source.Workspace.
func (s *Service) StageWorkspace(ctx context.Context, r io.Reader) (string, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return "", err
	}
	if s.workspaces == nil {
		return "", Errorf(EUNAVAILABLE, "this controller does not accept uploaded workspaces")
	}
	id, err := s.workspaces.Stage(ctx, a.Account, r)
	if err != nil {
		return "", err
	}
	s.log.Info("workspace uploaded", "workspace", id, "owner", a.Account)
	return id, nil
}

// takeWorkspaces claims the uploaded workspaces a delegation names and
// points their sources at the trees on the controller. The returned
// release deletes them again, for a delegation that does not go ahead.
func (s *Service) takeWorkspaces(ctx context.Context, owner AccountID, sources []Source) (func(), error) {
	var taken []string
	release := func() {
		for _, id := range taken {
			s.releaseWorkspace(ctx, id)
		}
	}
	for i := range sources {
		src := &sources[i]
		if src.Workspace == "" {
			continue
		}
		if s.workspaces == nil {
			return release, Errorf(EUNAVAILABLE, "this controller does not accept uploaded workspaces")
		}
		path, err := s.workspaces.Take(ctx, owner, src.Workspace)
		if err != nil {
			release()
			return func() {}, err
		}
		taken = append(taken, src.Workspace)
		src.LocalPath = path
	}
	return release, nil
}

// releaseWorkspaces deletes a session's uploaded trees once its box holds
// them: a workspace is shipped once.
func (s *Service) releaseWorkspaces(ctx context.Context, sess Session) {
	for _, src := range sess.Sources {
		if src.Workspace != "" {
			s.releaseWorkspace(ctx, src.Workspace)
		}
	}
}

// publishable drops the sources that name no repository (uploaded working
// trees): the forge has nowhere to push their commits (see uploadedTrees).
func publishable(sources []Source) []Source {
	var out []Source
	for _, src := range sources {
		if src.Repo != "" {
			out = append(out, src)
		}
	}
	return out
}

// uploadedTrees are the sources that name no repository: uploaded
// working trees, whose commits go back to the uploader.
func uploadedTrees(sources []Source) []Source {
	var out []Source
	for _, src := range sources {
		if src.Repo == "" && src.LocalPath != "" {
			out = append(out, src)
		}
	}
	return out
}

// bundleInfos records collected bundles of uploaded trees by their base
// names, so no controller path reaches a run's result, and says what
// happened to them.
func bundleInfos(bundles []Bundle) ([]BundleInfo, string) {
	var out []BundleInfo
	n := 0
	for _, b := range bundles {
		out = append(out, BundleInfo{Dir: b.Source.Dir, Commits: b.Commits, Name: filepath.Base(b.Path)})
		n += len(b.Commits)
	}
	if n == 0 {
		return nil, "no new commits on the uploaded working tree"
	}
	return out, fmt.Sprintf("%d commit(s) on the uploaded working tree: `asb mcp` brings them back as a local branch", n)
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func (s *Service) releaseWorkspace(ctx context.Context, id string) {
	if s.workspaces == nil {
		return
	}
	if err := s.workspaces.Release(context.WithoutCancel(ctx), id); err != nil {
		s.log.Warn("could not delete an uploaded workspace; the TTL sweep will", "workspace", id, "err", err)
	}
}
