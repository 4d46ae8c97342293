package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/asb-dev/asb/app"
)

// errUnsupportedMediaType is answered with 415, a status with no app code.
var errUnsupportedMediaType = errors.New("Content-Type must be application/json")

// decodeJSON reads a request body into v: application/json only, at most
// max bytes, unknown fields and trailing data refused. Its errors are
// caller-safe and never quote the body, which may carry secrets.
func decodeJSON(w http.ResponseWriter, r *http.Request, max int64, v any) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return errUnsupportedMediaType
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, max))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, max)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return jsonError(err, max)
		}
		return app.Errorf(app.EINVALID, "the request body has data after its JSON object")
	}
	return nil
}

func jsonError(err error, max int64) error {
	var (
		tooBig  *http.MaxBytesError
		syntax  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &tooBig):
		return app.Errorf(app.ETOOLARGE, "the request body is larger than %d bytes", max)
	case errors.Is(err, io.EOF):
		return app.Errorf(app.EINVALID, "the request body is empty: send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return app.Errorf(app.EINVALID, "the request body is not valid JSON: it ends early")
	case errors.As(err, &syntax):
		return app.Errorf(app.EINVALID, "the request body is not valid JSON (at byte %d)", syntax.Offset)
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return app.Errorf(app.EINVALID, "the request body must be a JSON object")
		}
		return app.Errorf(app.EINVALID, "field %q must be %s, not a JSON %s", typeErr.Field, kindName(typeErr), typeErr.Value)
	}
	// encoding/json has no typed error for unknown fields; its text is
	// `json: unknown field "name"`, which names the field and nothing else.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if uq, uerr := strconv.Unquote(name); uerr == nil {
			name = strconv.Quote(clipName(uq))
		}
		return app.Errorf(app.EINVALID, "unknown field %s", name)
	}
	return app.Errorf(app.EINVALID, "the request body is not a valid request")
}

func kindName(e *json.UnmarshalTypeError) string {
	if e.Type == nil {
		return "another type"
	}
	switch k := e.Type.Kind().String(); k {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "a list"
	case "map", "struct":
		return "an object"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return "a number"
	default:
		return fmt.Sprintf("a %s", k)
	}
}

func clipName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
