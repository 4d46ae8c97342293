package app

import (
	"context"
	"io"
	"strings"
)

// RunBundle opens the bundle of the agent's commits on an uploaded working
// tree (the source in /workspace/dir) of a finished run, for the caller
// that uploaded it to bring them back. Runs of sessions the caller may not
// see are ENOTFOUND, like runs that do not exist.
func (s *Service) RunBundle(ctx context.Context, id RunID, dir string) (io.ReadCloser, int64, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return nil, 0, err
	}
	if _, err := ParseRunID(string(id)); err != nil {
		return nil, 0, err
	}
	if err := CheckDirName(dir); err != nil {
		return nil, 0, err
	}
	var name string
	err = s.store.View(ctx, func(tx Tx) error {
		r, err := tx.GetRun(id)
		if err != nil {
			return err
		}
		sess, err := tx.GetSession(r.SessionID)
		if err != nil {
			return err
		}
		if !a.sees(sess.Owner) {
			return Errorf(ENOTFOUND, "run %s not found", id)
		}
		for _, b := range r.Result.Bundles {
			if b.Dir == dir {
				name = b.Name
				return nil
			}
		}
		return Errorf(ENOTFOUND, "run %s brought no commits out of /workspace/%s", id, dir)
	})
	if err != nil {
		return nil, 0, err
	}
	if err := CheckBundleName(name); err != nil {
		return nil, 0, err
	}
	return s.sandbox.OpenBundle(name)
}

// CheckBundleName accepts a bundle file's base name as Collect writes it:
// a plain name ending in .bundle, so it never carries a path.
func CheckBundleName(name string) error {
	base, ok := strings.CutSuffix(name, ".bundle")
	if !ok || base == "" || len(name) > 255 || strings.HasPrefix(name, ".") || strings.Contains(name, "..") {
		return Errorf(EINVALID, "bundle name %q is not a plain file name ending in .bundle", clip(name, 100))
	}
	for _, c := range base {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return Errorf(EINVALID, "bundle name %q is not a plain file name ending in .bundle", clip(name, 100))
		}
	}
	return nil
}
