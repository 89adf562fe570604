package protocol

import (
	"fmt"
	"reflect"

	hessian "github.com/apache/dubbo-go-hessian2"
	"github.com/apache/dubbo-go-hessian2/java_exception"
)

// Exception is a Java exception carried by a response (B.9).
type Exception struct {
	Class   string // Java class name, e.g. java.lang.IllegalArgumentException
	Message string // detailMessage, or the class name when it had none
}

func (e *Exception) Error() string {
	if e.Message == "" || e.Message == e.Class {
		return e.Class
	}
	return e.Class + ": " + e.Message
}

// throwables are the exception classes we send as themselves: JDK classes
// every Java and dubbo-go consumer can instantiate.
var throwables = map[string]func(string) java_exception.Throwabler{
	"java.lang.Throwable":                     func(m string) java_exception.Throwabler { return java_exception.NewThrowable(m) },
	"java.lang.Exception":                     func(m string) java_exception.Throwabler { return java_exception.NewException(m) },
	"java.lang.RuntimeException":              func(m string) java_exception.Throwabler { return java_exception.NewRuntimeException(m) },
	"java.lang.IllegalArgumentException":      func(m string) java_exception.Throwabler { return java_exception.NewIllegalArgumentException(m) },
	"java.lang.IllegalStateException":         func(m string) java_exception.Throwabler { return java_exception.NewIllegalStateException(m) },
	"java.lang.UnsupportedOperationException": func(m string) java_exception.Throwabler { return java_exception.NewUnsupportedOperationException(m) },
	"java.lang.NullPointerException":          func(m string) java_exception.Throwabler { return java_exception.NewNullPointerException(m) },
	"java.util.concurrent.TimeoutException":   func(m string) java_exception.Throwabler { return java_exception.NewTimeoutException(m) },
	"java.util.concurrent.RejectedExecutionException": func(m string) java_exception.Throwabler {
		return java_exception.NewRejectedExecutionException(m)
	},
}

// Throwable turns e into the object written on the wire: its own class
// when it is a JDK class we know, else java.lang.RuntimeException whose
// message starts with the original class name, as Java's ExceptionFilter
// wraps exceptions the consumer may not have.
func (e *Exception) Throwable() java_exception.Throwabler {
	if e.Class == "" {
		return java_exception.NewRuntimeException(e.Message)
	}
	if mk, ok := throwables[e.Class]; ok {
		return mk(e.Message)
	}
	return java_exception.NewRuntimeException(e.Class + ": " + e.Message)
}

// ExceptionOf interprets a decoded exception result; wireClass is the
// class name read from the wire ("" if unknown): a dubbo response's, or
// the type of a Triple wrapper that carries an exception. Any Throwable
// class is accepted: known ones decode to java_exception types, unknown
// ones to types the hessian library registers on the fly (which forget
// their class name), or to a map when the class lacks Throwable's fields.
func ExceptionOf(v any, wireClass string) *Exception {
	e := exceptionValue(v)
	if wireClass != "" {
		if e.Message == e.Class {
			e.Message = wireClass
		}
		e.Class = wireClass
	}
	return e
}

func exceptionValue(v any) *Exception {
	switch t := v.(type) {
	case nil:
		return &Exception{Class: "java.lang.Throwable", Message: "java.lang.Throwable"}
	case java_exception.Throwabler:
		e := &Exception{Class: t.JavaClassName(), Message: detailMessage(t)}
		if e.Message == "" {
			e.Message = e.Class
		}
		return e
	case map[string]any:
		e := &Exception{}
		e.Class, _ = t[hessian.ClassKey].(string)
		e.Message, _ = t["detailMessage"].(string)
		if e.Class == "" {
			e.Class = "java.lang.Throwable"
		}
		if e.Message == "" {
			e.Message = e.Class
		}
		return e
	case string:
		return &Exception{Class: "java.lang.Throwable", Message: t}
	}
	// Not printed: decoded values may reference themselves.
	return &Exception{Class: "java.lang.Throwable", Message: fmt.Sprintf("(%T instead of an exception)", v)}
}

// detailMessage reads the DetailMessage field every java_exception type has;
// their Error methods are not all the bare message.
func detailMessage(t java_exception.Throwabler) string {
	rv := reflect.ValueOf(t)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return ""
		}
		rv = rv.Elem()
	}
	if rv.Kind() == reflect.Struct {
		if f := rv.FieldByName("DetailMessage"); f.IsValid() && f.Kind() == reflect.String {
			return f.String()
		}
	}
	return t.Error()
}
