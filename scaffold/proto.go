package scaffold

import "errors"

// protoFile is what the templates of a protobuf handler fill in.
type protoFile struct{}

func protoHandler(Spec) (*handler, error) { return nil, errors.New("not yet") }
