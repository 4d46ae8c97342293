package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	gh "github.com/asb-dev/asb/github"
)

func TestRepoSuggestionsMergeAndCachePerCaller(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	userCalls, appCalls := 0, 0
	r := &repoSuggestions{
		userRepos: func(ctx context.Context) ([]string, error) {
			userCalls++
			a, _ := app.ActorFrom(ctx)
			if a.Account == "acc_bob" {
				return []string{"bob/tools"}, nil
			}
			return []string{"acme/api", "zed/z"}, nil
		},
		installed: func(context.Context) ([]gh.InstalledRepo, error) {
			appCalls++
			return []gh.InstalledRepo{{Repo: "acme/API", InstallationID: 1}, {Repo: "acme/web", InstallationID: 1}}, nil
		},
		ttl: time.Minute, now: func() time.Time { return now }, log: slog.New(slog.DiscardHandler),
		cache: map[app.AccountID]cachedRepos{},
	}
	op := app.WithActor(context.Background(), app.OperatorActor)
	bob := app.WithActor(context.Background(), app.Actor{Account: "acc_bob", Name: "bob"})
	cases := []struct {
		name              string
		ctx               context.Context
		advance           time.Duration
		want              string
		userCalls, appCls int
	}{
		{"operator: accounts and installations, deduplicated", op, 0, "acme/api,acme/web,zed/z", 1, 1},
		{"operator again: cached", op, 30 * time.Second, "acme/api,acme/web,zed/z", 1, 1},
		{"another caller: own accounts only, no installations", bob, 0, "bob/tools", 2, 1},
		{"operator after the TTL: asked again", op, 31 * time.Second, "acme/api,acme/web,zed/z", 3, 2},
	}
	for _, c := range cases {
		now = now.Add(c.advance)
		got, err := r.List(c.ctx)
		if err != nil || strings.Join(got, ",") != c.want || userCalls != c.userCalls || appCalls != c.appCls {
			t.Errorf("%s: %v %v (calls %d/%d, want %d/%d)", c.name, got, err, userCalls, appCalls, c.userCalls, c.appCls)
		}
	}
	// A failing installation listing still shows the accounts' repositories.
	r.installed = func(context.Context) ([]gh.InstalledRepo, error) { return nil, errors.New("down") }
	now = now.Add(time.Hour)
	if got, err := r.List(op); err != nil || strings.Join(got, ",") != "acme/api,zed/z" {
		t.Errorf("with the App down: %v %v", got, err)
	}
	if _, err := r.List(context.Background()); app.ErrorCode(err) != app.EUNAUTHORIZED {
		t.Errorf("no caller: %v", err)
	}
}
