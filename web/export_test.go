package web

import "github.com/asb-dev/asb/app"

// WithBeforeEvent sets the hook that runs before each streamed event, so
// a test can hold the stream and make its subscription lag.
func WithBeforeEvent(o Options, f func(app.Event)) Options {
	o.beforeEvent = f
	return o
}
