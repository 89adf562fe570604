package tree

import (
	"errors"
	"fmt"

	"github.com/dubbo-lab/dubbo/embeddedzk/wire"
)

// Txn is one logged state change with everything needed to replay it:
// creates carry the final path, owner and parent cversion; multi carries
// its resolved sub-transactions.
type Txn struct {
	Zxid    int64
	Time    int64 // ms since epoch
	Session int64
	Type    wire.OpCode // OpCreate, OpDelete, OpSetData, OpSetACL, OpCheck, OpMulti, OpCreateSession, OpCloseSession

	Path           string
	Data           []byte
	ACL            []wire.ACL
	Owner          int64 // create: raw ephemeralOwner
	ParentCversion int32 // create: the parent's new cversion
	Version        int32 // setData: new version; setACL: new aversion
	Timeout        int32 // createSession
	Passwd         []byte
	Ops            []Txn // multi
}

const txnFormat = 1

// ErrBadTxn means a logged record could not be decoded.
var ErrBadTxn = errors.New("tree: bad transaction record")

// Encode serialises the transaction for the log.
func (x *Txn) Encode() []byte {
	e := wire.NewEncoder(make([]byte, 0, 64+len(x.Path)+len(x.Data)))
	e.Byte(txnFormat)
	e.Int64(x.Zxid)
	e.Int64(x.Time)
	e.Int64(x.Session)
	x.encodeBody(e)
	return e.Bytes()
}

func (x *Txn) encodeBody(e *wire.Encoder) {
	e.Int32(int32(x.Type))
	switch x.Type {
	case wire.OpCreate:
		e.String(x.Path)
		e.Buffer(x.Data)
		e.ACLs(x.ACL)
		e.Int64(x.Owner)
		e.Int32(x.ParentCversion)
	case wire.OpDelete, wire.OpCheck:
		e.String(x.Path)
	case wire.OpSetData:
		e.String(x.Path)
		e.Buffer(x.Data)
		e.Int32(x.Version)
	case wire.OpSetACL:
		e.String(x.Path)
		e.ACLs(x.ACL)
		e.Int32(x.Version)
	case wire.OpMulti:
		e.Int32(int32(len(x.Ops)))
		for i := range x.Ops {
			x.Ops[i].encodeBody(e)
		}
	case wire.OpCreateSession:
		e.Int32(x.Timeout)
		e.Buffer(x.Passwd)
	case wire.OpCloseSession:
	}
}

// DecodeTxn parses a record written by Encode.
func DecodeTxn(b []byte) (*Txn, error) {
	d := wire.NewDecoder(b)
	if v := d.Byte(); v != txnFormat {
		return nil, fmt.Errorf("%w: format %d", ErrBadTxn, v)
	}
	x := &Txn{Zxid: d.Int64(), Time: d.Int64(), Session: d.Int64()}
	if err := x.decodeBody(d, 0); err != nil {
		return nil, err
	}
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadTxn, err)
	}
	return x, nil
}

func (x *Txn) decodeBody(d *wire.Decoder, depth int) error {
	x.Type = wire.OpCode(d.Int32())
	switch x.Type {
	case wire.OpCreate:
		x.Path = d.String()
		x.Data = d.Buffer()
		x.ACL = d.ACLs()
		x.Owner = d.Int64()
		x.ParentCversion = d.Int32()
	case wire.OpDelete, wire.OpCheck:
		x.Path = d.String()
	case wire.OpSetData:
		x.Path = d.String()
		x.Data = d.Buffer()
		x.Version = d.Int32()
	case wire.OpSetACL:
		x.Path = d.String()
		x.ACL = d.ACLs()
		x.Version = d.Int32()
	case wire.OpMulti:
		if depth > 0 {
			return fmt.Errorf("%w: nested multi", ErrBadTxn)
		}
		n := d.Int32()
		if n < 0 || int(n) > d.Remaining()/4 {
			return fmt.Errorf("%w: multi of %d", ErrBadTxn, n)
		}
		x.Ops = make([]Txn, n)
		for i := range x.Ops {
			if err := x.Ops[i].decodeBody(d, depth+1); err != nil {
				return err
			}
		}
	case wire.OpCreateSession:
		x.Timeout = d.Int32()
		x.Passwd = d.Buffer()
	case wire.OpCloseSession:
	default:
		return fmt.Errorf("%w: type %d", ErrBadTxn, int32(x.Type))
	}
	return d.Err()
}
