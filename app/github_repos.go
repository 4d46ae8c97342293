package app

import (
	"context"
	"slices"
	"sort"
	"strings"
)

// GitHubRepos lists the repositories ("owner/name") the caller's own
// stored GitHub accounts may push to, sorted and without duplicates, for
// a repository picker. An account whose token GitHub now refuses is
// skipped (the others still answer); with no prober configured the list
// is empty.
func (s *Service) GitHubRepos(ctx context.Context) ([]string, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return nil, err
	}
	if s.github == nil || s.sealer == nil {
		return nil, nil
	}
	type stored struct {
		acct   GitHubAccount
		sealed []byte
	}
	var mine []stored
	err = s.store.View(ctx, func(tx Tx) error {
		list, err := tx.ListGitHubAccounts(a.Account)
		if err != nil {
			return err
		}
		for _, acct := range list {
			_, sealed, err := tx.GetGitHubAccount(acct.ID)
			if err != nil {
				return err
			}
			mine = append(mine, stored{acct, sealed})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, m := range mine {
		tok, err := s.openToken(m.acct, m.sealed)
		if err != nil {
			return nil, err
		}
		repos, err := s.github.Repos(ctx, tok)
		if err != nil {
			if ErrorCode(err) == EUNAUTHORIZED || ErrorCode(err) == EFORBIDDEN {
				s.log.Info("a stored GitHub token cannot list repositories", "login", m.acct.Login, "err", ErrorMessage(err))
				continue
			}
			return nil, err
		}
		for _, r := range repos {
			if _, _, err := ParseRepo(r); err == nil && !seen[strings.ToLower(r)] {
				seen[strings.ToLower(r)] = true
				out = append(out, r)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return strings.ToLower(out[i]) < strings.ToLower(out[j]) })
	return slices.Clip(out), nil
}
