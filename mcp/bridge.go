package mcp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BridgeOptions configure a stdio bridge to a controller's /mcp endpoint.
type BridgeOptions struct {
	// Endpoint is the controller's /mcp URL.
	Endpoint string
	// Token is sent as the bearer token on every request.
	Token   string
	Version string
}

// Bridge connects to a running controller's Streamable HTTP endpoint and
// returns a local server that offers the same tools, forwarding every call
// and its progress. `asb mcp` serves it on stdio, so an IDE that starts a
// local process uses the same fleet, queue and sessions as every other
// surface, and no second controller ever opens the database.
func Bridge(ctx context.Context, o BridgeOptions) (*sdkmcp.Server, func() error, error) {
	var mu sync.Mutex
	// Progress tokens of calls in flight, keyed by the token sent upstream.
	inflight := map[any]func(*sdkmcp.ProgressNotificationParams){}
	client := sdkmcp.NewClient(&sdkmcp.Implementation{Name: "asb-mcp-bridge", Version: o.Version}, &sdkmcp.ClientOptions{
		ProgressNotificationHandler: func(ctx context.Context, req *sdkmcp.ProgressNotificationClientRequest) {
			mu.Lock()
			forward := inflight[req.Params.ProgressToken]
			mu.Unlock()
			if forward != nil {
				forward(req.Params)
			}
		},
	})
	transport := &sdkmcp.StreamableClientTransport{Endpoint: o.Endpoint,
		HTTPClient: &http.Client{Transport: bearerTransport{token: o.Token, next: http.DefaultTransport}}}
	remote, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", o.Endpoint, err)
	}
	tools, err := remote.ListTools(ctx, nil)
	if err != nil {
		remote.Close()
		return nil, nil, fmt.Errorf("list the controller's tools: %w", err)
	}
	server := sdkmcp.NewServer(&sdkmcp.Implementation{Name: "asb", Version: o.Version}, &sdkmcp.ServerOptions{Instructions: instructions})
	for _, t := range tools.Tools {
		name := t.Name
		server.AddTool(t, func(ctx context.Context, req *sdkmcp.CallToolRequest) (*sdkmcp.CallToolResult, error) {
			params := &sdkmcp.CallToolParams{Name: name, Arguments: req.Params.Arguments}
			if tok := req.Params.GetProgressToken(); tok != nil {
				params.Meta = sdkmcp.Meta{"progressToken": tok}
				mu.Lock()
				inflight[tok] = func(p *sdkmcp.ProgressNotificationParams) {
					_ = req.Session.NotifyProgress(ctx, &sdkmcp.ProgressNotificationParams{
						ProgressToken: tok, Progress: p.Progress, Total: p.Total, Message: p.Message})
				}
				mu.Unlock()
				defer func() {
					mu.Lock()
					delete(inflight, tok)
					mu.Unlock()
				}()
			}
			return remote.CallTool(ctx, params)
		})
	}
	return server, remote.Close, nil
}

// bearerTransport adds the token to every request to the controller.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// ServeStdio serves server on r and w (a process's stdin and stdout) until
// ctx ends or the peer goes away. Closing is left to the process.
func ServeStdio(ctx context.Context, server *sdkmcp.Server, r io.Reader, w io.Writer) error {
	return server.Run(ctx, &sdkmcp.IOTransport{Reader: io.NopCloser(r), Writer: nopWriteCloser{w}})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
