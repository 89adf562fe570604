package sdktest

import (
	"context"
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/plugins/sdk"
)

type noClass struct{ A int32 }

type refused struct{}

func (refused) Shape(context.Context) (int32, int32) { return 0, 0 }

type takesPOJO struct{}

func (takesPOJO) Take(context.Context, noClass) error { return nil }

type unsigned struct{}

func (unsigned) Count(context.Context, uint32) error { return nil }

// New refuses what sdk.Serve refuses, with Serve's advice.
func TestStartRefuses(t *testing.T) {
	tests := []struct {
		handler any
		want    string
	}{
		{takesPOJO{}, "struct sdktest.noClass has no JavaClassName() string method; add one"},
		{unsigned{}, "(Java has no unsigned integers); use int32 or int64"},
		{refused{}, "must return (T, error) or error"},
	}
	for _, tt := range tests {
		_, stop, err := start([]sdk.Servable{sdk.Service{Interface: "org.example.X", Handler: tt.handler}})
		if err == nil {
			stop()
			t.Errorf("%T was served", tt.handler)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%T: err = %v, want %q in it", tt.handler, err, tt.want)
		}
	}
}
