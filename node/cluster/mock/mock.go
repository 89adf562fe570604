// Package mock is Dubbo's mock: the "mock" setting of a reference, or of
// one method ("<method>.mock"), given in the consumer's config or by an
// override rule, which answers calls without the provider:
//
//	force:return <value>   answer every call with value; no call is made
//	fail:return <value>    call; answer with value only when the call
//	                       failed with an error that is not a business
//	                       exception (no provider, timeout, connection...)
//	return <value>         the same as fail:return
//	[force:|fail:]throw    fail with an error that is not a business exception
//	[force:|fail:]throw <exception class>
//	                       fail with a business exception of that class
//
// A value is empty (the empty value of the method's return type), null,
// true, false, a quoted string, a number, JSON ({"a":1}, [1,2]; keys may go
// unquoted as Java's parser allows) or any other text, a string; it is
// typed from the method's return type as Java's MockInvoker does
// ([Mock.Value]); a protobuf (IDL) method answers the default response
// message for empty or null, and refuses other values. mock=true, mock=default and class names ask Java to load
// a mock class: this runtime has none, and [Parse] refuses them with
// [ErrUnsupported].
//
// [Invoker] applies the setting around a reference's cluster invoker, as
// Java's MockClusterInvoker: a forced answer makes no call and so is
// counted nowhere; a failed call is counted as failed by the provider
// invokers it went through, and the answer that replaces it is not
// counted. Results it makes carry Provider "mock".
package mock

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Key is the URL parameter of the setting; "<method>.mock" is one method's.
const Key = "mock"

// Provider is the rpc.Result.Provider of an answer the mock made.
const Provider = "mock"

// ErrUnsupported is the category of a mock setting that needs a Java
// mock class.
var ErrUnsupported = errors.New("mock classes are not supported")

// Mock is one parsed setting.
type Mock struct {
	// Raw is the setting as given.
	Raw string
	// Force answers without calling; otherwise the mock answers only when
	// the call failed with an error that is not a business exception.
	Force bool
	// Throw fails the call: with a business exception of class Exception,
	// or, when Exception is "", with an error that is not one.
	Throw     bool
	Exception string
	// Return is the value of "return <value>"; "null" for a bare return.
	Return string
}

// Parse reads a setting, URL-decoded first as Java does ("+" is a space,
// %xx a byte). A setting that is off ("", false, 0, null, N/A, as Java's
// ConfigUtils.isEmpty) gives nil and no error. Errors wrap ErrUnsupported
// and say what to write instead.
func Parse(s string) (*Mock, error) {
	v := strings.TrimSpace(s)
	if off(v) {
		return nil, nil
	}
	// Java decodes the setting as a URL component: "return+null" is
	// "return null", as old override URLs write it.
	if d, err := url.QueryUnescape(v); err == nil {
		v = strings.TrimSpace(d)
	}
	m := &Mock{Raw: s, Force: strings.HasPrefix(v, "force")}
	switch {
	case strings.EqualFold(v, "return"):
		m.Return = "null"
		return m, nil
	case isDefault(v) || strings.EqualFold(v, "fail") || strings.EqualFold(v, "force"):
		return nil, unsupported(s, "the class <interface>Mock")
	}
	v = strings.TrimSpace(strings.TrimPrefix(v, "fail:"))
	v = strings.TrimSpace(strings.TrimPrefix(v, "force:"))
	if strings.HasPrefix(v, "return") || strings.HasPrefix(v, "throw") {
		v = strings.ReplaceAll(v, "`", `"`)
	}
	switch {
	case v == "return":
		m.Return = "null"
	case strings.HasPrefix(v, "return "):
		m.Return = strings.TrimSpace(v[len("return "):])
	case strings.HasPrefix(v, "throw"):
		m.Throw, m.Exception = true, strings.TrimSpace(v[len("throw"):])
	case isDefault(v):
		return nil, unsupported(s, "the class <interface>Mock")
	case v == "":
		return nil, fmt.Errorf("%w: mock %q says neither return nor throw; write force:return <value>, fail:return <value>, throw or throw <exception class>", ErrUnsupported, s)
	default:
		return nil, unsupported(s, "the class "+v)
	}
	return m, nil
}

// Check is Parse for config validation: nil for a setting this runtime
// applies (or one that is off).
func Check(s string) error {
	_, err := Parse(s)
	return err
}

func unsupported(s, what string) error {
	return fmt.Errorf("%w: mock %q asks Java Dubbo to load %s, and this runtime has no Java classes; "+
		"write force:return <value>, fail:return <value>, throw or throw <exception class>", ErrUnsupported, s, what)
}

// off is Java's ConfigUtils.isEmpty.
func off(v string) bool {
	return v == "" || v == "0" || strings.EqualFold(v, "false") || strings.EqualFold(v, "null") || strings.EqualFold(v, "N/A")
}

// isDefault is Java's ConfigUtils.isDefault.
func isDefault(v string) bool {
	return strings.EqualFold(v, "true") || strings.EqualFold(v, "default")
}

// Mocked is the message of the exceptions a throw mock makes, Java's.
const Mocked = "mocked exception for service degradation."
