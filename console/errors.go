package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/dubbo-lab/dubbo/console/catalog"
	"github.com/dubbo-lab/dubbo/console/rules"
	"github.com/dubbo-lab/dubbo/monitor/store"
	"github.com/dubbo-lab/dubbo/node/registry"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Error kinds: the "kind" of the console's {"error": {"kind", "message"}}
// answers. Test calls answer with the gateway's kinds (node/rpc.s:
// no_provider, timeout, ...); the two the console shares with them are
// theirs, the rest are the console's own.
const (
	kindBadRequest = rpc.KindBadRequest
	kindOther      = rpc.KindOther

	kindNotFound             = "not_found"
	kindRegistryUnavailable  = "registry_unavailable"
	kindNoStatistics         = "no_statistics"
	kindUnauthorized         = "unauthorized"
	kindForbidden            = "forbidden"
	kindMethodNotAllowed     = "method_not_allowed"
	kindUnsupportedMediaType = "unsupported_media_type"
	kindNoHistory            = "no_history"
)

// kindOfStatus names the refusals that come as a bare status: echo's
// router (404, 405) and the guard (401, 403).
var kindOfStatus = map[int]string{
	http.StatusUnauthorized:         kindUnauthorized,
	http.StatusForbidden:            kindForbidden,
	http.StatusNotFound:             kindNotFound,
	http.StatusMethodNotAllowed:     kindMethodNotAllowed,
	http.StatusUnsupportedMediaType: kindUnsupportedMediaType,
}

// errorBody is the API's error shape (the gateway's too).
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// apiErr is an error with the HTTP status and kind the API answers with.
type apiErr struct {
	status int
	kind   string
	msg    string
}

func (e *apiErr) Error() string { return e.msg }

func notFound(format string, args ...any) error {
	return &apiErr{http.StatusNotFound, kindNotFound, fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return &apiErr{http.StatusBadRequest, kindBadRequest, fmt.Sprintf(format, args...)}
}

var errNoStats = &apiErr{http.StatusServiceUnavailable, kindNoStatistics, "no statistics: the console runs without the monitor's store"}

// classify gives a (non-nil) error its status and kind: its own when it
// has them, else by what lower layers say went wrong.
func classify(err error) *apiErr {
	var ae *apiErr
	var he *echo.HTTPError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &he):
		kind, ok := kindOfStatus[he.Code]
		if !ok {
			kind = kindOther
			if he.Code < 500 {
				kind = kindBadRequest
			}
		}
		return &apiErr{he.Code, kind, fmt.Sprint(he.Message)}
	case errors.Is(err, rules.ErrInvalid), errors.Is(err, catalog.ErrBadPath), errors.Is(err, store.ErrBadQuery):
		return &apiErr{http.StatusBadRequest, kindBadRequest, err.Error()}
	case errors.Is(err, catalog.ErrNoNode):
		return &apiErr{http.StatusNotFound, kindNotFound, err.Error()}
	case errors.Is(err, registry.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return &apiErr{http.StatusServiceUnavailable, kindRegistryUnavailable, err.Error()}
	}
	return &apiErr{http.StatusInternalServerError, kindOther, err.Error()}
}
