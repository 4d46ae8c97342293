package mcp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asb-dev/asb/app"
)

// GHTokenInput is the input of gh_token_add.
type GHTokenInput struct {
	Token string `json:"token" jsonschema:"a GitHub personal access token (classic or fine-grained) of the person the agent should push as"`
	Repo  string `json:"repo,omitempty" jsonschema:"optional owner/name: also check that the token can push there"`
}

// GHTokenOutput is the result of gh_token_add. It never holds the token.
type GHTokenOutput struct {
	Account   string   `json:"account,omitempty"`
	Login     string   `json:"login,omitempty"`
	TokenType string   `json:"tokenType,omitempty"`
	Orgs      []string `json:"orgs,omitempty"`
	Scopes    []string `json:"scopes,omitempty"`
	Repo      string   `json:"repo,omitempty"`
	CanPush   *bool    `json:"canPush,omitempty"`
}

const ghTokenDesc = `Store a GitHub personal access token for the person the sandbox agent should push as. Usually you don't need this: the GitHub App pushes where it is installed, and delegate asks for a token when one is needed — only call this when delegate (or the user) asks for one.
The token is identified with GitHub (GET /user), stored encrypted under its login, and used automatically for repositories it can push to: commits are authored as that person and pull requests opened by them. Adding a token for the same login again replaces it. The result names the login, its organisations and scopes, never the token.`

func (s *server) registerIdentity(srv *sdk.Server) {
	sdk.AddTool(srv, &sdk.Tool{Name: "gh_token_add", Description: ghTokenDesc}, s.ghTokenAdd)
}

func (s *server) ghTokenAdd(ctx context.Context, req *sdk.CallToolRequest, in GHTokenInput) (*sdk.CallToolResult, GHTokenOutput, error) {
	ctx, err := s.withActor(ctx, req)
	if err != nil {
		return nil, GHTokenOutput{}, err
	}
	if strings.TrimSpace(in.Token) == "" {
		return textResult("No token provided."), GHTokenOutput{}, nil
	}
	if in.Repo != "" {
		if _, _, err := app.ParseRepo(in.Repo); err != nil {
			return nil, GHTokenOutput{}, toolError("repo", "%s", app.ErrorMessage(err))
		}
	}
	acct, err := s.svc.AddGitHubToken(ctx, in.Token)
	if err != nil {
		if app.ErrorCode(err) == app.EINVALID {
			// The message never contains the token (app.CheckGitHubToken).
			return nil, GHTokenOutput{}, toolError("token", "%s", app.ErrorMessage(err))
		}
		return nil, GHTokenOutput{}, s.coreError("gh_token_add", err)
	}
	out := GHTokenOutput{Account: acct.ID, Login: acct.Login, TokenType: acct.TokenType, Orgs: acct.Orgs, Scopes: acct.Scopes}
	var b strings.Builder
	fmt.Fprintf(&b, "Stored GitHub account '%s' (%s).", acct.Login, acct.TokenType)
	if len(acct.Orgs) > 0 {
		fmt.Fprintf(&b, " orgs: %s.", strings.Join(acct.Orgs, ", "))
	}
	if len(acct.Scopes) > 0 {
		fmt.Fprintf(&b, " scopes: %s.", strings.Join(acct.Scopes, ", "))
	}
	if in.Repo != "" {
		ok, err := s.svc.CheckGitHubAccess(ctx, acct.ID, in.Repo)
		if err != nil {
			return nil, GHTokenOutput{}, s.coreError("gh_token_add", err)
		}
		out.Repo, out.CanPush = in.Repo, &ok
		if ok {
			fmt.Fprintf(&b, " Confirmed access to %s.", in.Repo)
		} else {
			fmt.Fprintf(&b, " NOTE: this token could NOT push to %s.", in.Repo)
		}
	}
	b.WriteString(" It will be used automatically for repos it can access.")
	return textResult(b.String()), out, nil
}
