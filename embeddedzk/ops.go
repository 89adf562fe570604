package embeddedzk

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk/tree"
	"github.com/dubbo-lab/dubbo/embeddedzk/watch"
	"github.com/dubbo-lab/dubbo/embeddedzk/wire"
)

// handle serves one request frame (header + body).
func (c *conn) handle(buf []byte) next {
	s := c.s
	start := time.Now()
	d := wire.NewDecoder(buf)
	var h wire.RequestHeader
	h.Decode(d)
	if d.Err() != nil {
		s.logger.Warn("malformed request header, closing", "remote", c.remote, "err", d.Err())
		return closeNow
	}
	s.stats.received.Add(1)
	c.stats.recv.Add(1)
	if err := s.notServing(); err != nil {
		// Nothing can be logged, and replies would wait for state that is
		// not on disk: close, and let the client come back when it is.
		s.logger.Debug("not serving, closing connection", "remote", c.remote, "err", err)
		return closeNow
	}
	sid := c.sessionID.Load()
	if !s.sessions.Touch(sid, start) {
		// The session expired or is closing: close without a reply, as
		// ZooKeeper does; the client learns on reconnect.
		return closeNow
	}
	nx := c.dispatch(h, buf[d.Offset():])
	c.stats.noteRequest(h, s.lastZxid.Load(), start)
	s.stats.noteLatency(time.Since(start))
	return nx
}

// dispatch serves one request by its op: the ops without a body, then the
// tree's writes and reads, then the ops of the session itself.
func (c *conn) dispatch(h wire.RequestHeader, body []byte) next {
	s := c.s
	switch h.Type {
	case wire.OpPing:
		c.reply(h.Xid, s.lastZxid.Load(), wire.ErrOk, nil)
		return keepReading
	case wire.OpCloseSession:
		return c.closeSession(h.Xid)
	case wire.OpCheck, wire.OpSASL:
		// check is only valid inside multi; SASL is not offered.
		c.reply(h.Xid, s.lastZxid.Load(), wire.ErrUnimplemented, nil)
		return keepReading
	}
	rec, err := wire.DecodeRequest(h.Type, body)
	if err != nil {
		return c.undecodable(h, err)
	}
	switch info, _ := wire.Op(h.Type); info.Kind {
	case wire.OpWrite:
		c.write(h.Xid, h.Type, rec)
		return keepReading
	case wire.OpRead:
		c.read(h.Xid, h.Type, rec)
		return keepReading
	}
	return c.sessionOp(h, rec)
}

// undecodable answers a request whose body did not decode: an op we do
// not know is unimplemented; a malformed body closes the connection.
func (c *conn) undecodable(h wire.RequestHeader, err error) next {
	s := c.s
	if errors.Is(err, wire.ErrUnknownOp) {
		s.logger.Debug("unimplemented op", "remote", c.remote, "op", int32(h.Type))
		c.reply(h.Xid, s.lastZxid.Load(), wire.ErrUnimplemented, nil)
		return keepReading
	}
	s.logger.Warn("malformed request, closing", "remote", c.remote, "op", h.Type.String(), "err", err)
	c.replyThenClose(h.Xid, s.lastZxid.Load(), wire.ErrMarshallingError)
	return closeAfterReply
}

// sessionOp serves the ops that act on the session rather than the tree:
// who it is, its watches, its authentication.
func (c *conn) sessionOp(h wire.RequestHeader, rec wire.Record) next {
	s := c.s
	switch h.Type {
	case wire.OpWhoAmI:
		c.reply(h.Xid, s.lastZxid.Load(), wire.ErrOk, c.whoAmI())
	case wire.OpCheckWatches, wire.OpRemoveWatches:
		c.reply(h.Xid, s.lastZxid.Load(), c.checkOrRemoveWatch(h.Type, rec.(*wire.WatchesRequest)), nil)
	case wire.OpAddWatch:
		c.addWatch(h.Xid, rec.(*wire.AddWatchRequest))
	case wire.OpSetWatches, wire.OpSetWatches2:
		c.setWatches(h.Xid, rec.(*wire.SetWatches))
	case wire.OpAuth:
		return c.auth(h.Xid, rec.(*wire.AuthPacket))
	case wire.OpReconfig:
		c.reply(h.Xid, s.lastZxid.Load(), wire.ErrReconfigDisabled, nil)
	default: // sasl and anything else decodable that we do not serve
		c.reply(h.Xid, s.lastZxid.Load(), wire.ErrUnimplemented, nil)
	}
	return keepReading
}

// checkOrRemoveWatch checks that the session has the watch r names, or
// removes it, and says how that went.
func (c *conn) checkOrRemoveWatch(op wire.OpCode, r *wire.WatchesRequest) wire.ErrCode {
	switch {
	case r.Type < wire.WatcherChildren || r.Type > wire.WatcherPersistentRecursive:
		return wire.ErrBadArguments
	case op == wire.OpCheckWatches && !c.s.watches.Has(r.Path, c, r.Type),
		op == wire.OpRemoveWatches && !c.s.watches.Remove(r.Path, c, r.Type):
		return wire.ErrNoWatcher
	}
	return wire.ErrOk
}

// addWatch sets a persistent watch, recursive or not.
func (c *conn) addWatch(xid int32, r *wire.AddWatchRequest) {
	s := c.s
	kind := watch.Persistent
	switch r.Mode {
	case wire.AddWatchPersistent:
	case wire.AddWatchPersistentRecursive:
		kind = watch.Recursive
	default:
		c.reply(xid, s.lastZxid.Load(), wire.ErrBadArguments, nil)
		return
	}
	s.mu.RLock()
	s.watches.Add(r.Path, c, kind)
	c.reply(xid, s.tree.LastZxid(), wire.ErrOk, &wire.IntResponse{N: 0})
	s.mu.RUnlock()
}

// auth adds a digest identity to the session (and the super user's, for
// its digest); anything else fails and closes the connection.
func (c *conn) auth(xid int32, r *wire.AuthPacket) next {
	s := c.s
	if r.Scheme != "digest" || !strings.Contains(string(r.Auth), ":") {
		s.logger.Warn("authentication failed, closing", "remote", c.remote, "scheme", r.Scheme)
		c.replyThenClose(xid, 0, wire.ErrAuthFailed)
		return closeAfterReply
	}
	id := tree.DigestID(string(r.Auth))
	if s.isSuper(id) {
		// As Apache's DigestAuthenticationProvider: the super id first,
		// then the digest id like any other user.
		s.logger.Info("super user authenticated", "remote", c.remote, "session", fmt.Sprintf("%#x", c.sessionID.Load()))
		c.addAuth(wire.ID{Scheme: "super", ID: ""})
	}
	c.addAuth(wire.ID{Scheme: "digest", ID: id})
	c.reply(xid, 0, wire.ErrOk, nil)
	return keepReading
}

// isSuper reports whether a digest id is the configured super user's.
func (s *Server) isSuper(digestID string) bool {
	return s.cfg.SuperDigest != "" && subtle.ConstantTimeCompare([]byte(digestID), []byte(s.cfg.SuperDigest)) == 1
}

// write executes a write under the exclusive lock and queues its reply
// before releasing it, so the reply and the events it caused keep zxid order.
func (c *conn) write(xid int32, op wire.OpCode, rec wire.Record) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.tree.Execute(op, rec, c.caller(), s.nextZxid(), time.Now().UnixMilli())
	s.commit(o.Txn, o.Triggers)
	c.reply(xid, s.tree.LastZxid(), o.Err, o.Resp)
}

// read answers a read under the shared lock; a watch it sets is registered
// before the reply is queued, so no change can slip between them.
func (c *conn) read(xid int32, op wire.OpCode, rec wire.Record) {
	s := c.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	who := c.caller()
	zxid := s.tree.LastZxid()
	switch op {
	case wire.OpExists:
		r := rec.(*wire.PathWatchRequest)
		st, code := s.tree.Exists(r.Path, who)
		if r.Watch && (code == wire.ErrOk || code == wire.ErrNoNode) {
			s.watches.Add(r.Path, c, watch.Data)
		}
		c.reply(xid, zxid, code, &wire.StatResponse{Stat: st})
	case wire.OpGetData:
		code, resp := c.getData(rec.(*wire.PathWatchRequest), who)
		c.reply(xid, zxid, code, resp)
	case wire.OpGetChildren, wire.OpGetChildren2:
		r := rec.(*wire.PathWatchRequest)
		code, resp := c.getChildren(r, op, who)
		c.reply(xid, zxid, code, resp)
	case wire.OpGetACL:
		acl, st, code := s.tree.GetACL(rec.(*wire.PathRequest).Path, who)
		c.reply(xid, zxid, code, &wire.GetACLResponse{ACL: acl, Stat: st})
	case wire.OpSync:
		c.reply(xid, zxid, wire.ErrOk, &wire.PathRequest{Path: rec.(*wire.PathRequest).Path})
	case wire.OpGetAllChildrenNumber:
		n, code := s.tree.AllChildrenNumber(rec.(*wire.PathRequest).Path, who)
		c.reply(xid, zxid, code, &wire.IntResponse{N: n})
	case wire.OpGetEphemerals:
		c.reply(xid, zxid, wire.ErrOk, &wire.StringsResponse{Strings: s.tree.Ephemerals(who.Session, rec.(*wire.PathRequest).Path)})
	case wire.OpMultiRead:
		res := &wire.MultiResponse{}
		for _, op := range rec.(*wire.MultiRequest).Ops {
			r := op.Req.(*wire.PathWatchRequest)
			var code wire.ErrCode
			var resp wire.Record
			if op.Type == wire.OpGetData {
				code, resp = c.getData(r, who)
			} else {
				code, resp = c.getChildren(r, op.Type, who)
			}
			if code != wire.ErrOk {
				res.Results = append(res.Results, wire.MultiResult{Type: wire.OpError, Err: code})
			} else {
				res.Results = append(res.Results, wire.MultiResult{Type: op.Type, Resp: resp})
			}
		}
		c.reply(xid, zxid, wire.ErrOk, res)
	default: // a read in the op table that has no case here yet
		c.reply(xid, zxid, wire.ErrUnimplemented, nil)
	}
}

func (c *conn) getData(r *wire.PathWatchRequest, who tree.Caller) (wire.ErrCode, wire.Record) {
	data, st, code := c.s.tree.GetData(r.Path, who)
	if code == wire.ErrOk && r.Watch {
		c.s.watches.Add(r.Path, c, watch.Data)
	}
	return code, &wire.GetDataResponse{Data: data, Stat: st}
}

func (c *conn) getChildren(r *wire.PathWatchRequest, op wire.OpCode, who tree.Caller) (wire.ErrCode, wire.Record) {
	kids, st, code := c.s.tree.Children(r.Path, who)
	if code == wire.ErrOk && r.Watch {
		c.s.watches.Add(r.Path, c, watch.Child)
	}
	if op == wire.OpGetChildren2 {
		return code, &wire.GetChildren2Response{Children: kids, Stat: st}
	}
	return code, &wire.GetChildrenResponse{Children: kids}
}

// setWatches re-arms watches after a reconnect; changes the client missed
// are sent as events right away, before the reply.
func (c *conn) setWatches(xid int32, sw *wire.SetWatches) {
	s := c.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	events := s.watches.Rearm(c, sw, func(p string) watch.NodeState {
		st, ok := s.tree.Stat(p)
		return watch.NodeState{Exists: ok, Mzxid: st.Mzxid, Pzxid: st.Pzxid}
	})
	zxid := s.tree.LastZxid()
	for _, e := range events {
		c.queueEvent(e.Path, e.Type, zxid)
	}
	c.reply(xid, zxid, wire.ErrOk, nil)
}

// closeSession deletes the session's ephemerals, replies and closes.
func (c *conn) closeSession(xid int32) next {
	s := c.s
	id := c.sessionID.Load()
	s.sessions.MarkClosing(id)
	s.mu.Lock()
	if s.tree.HasSession(id) {
		x, trig := s.tree.CloseSession(id, s.nextZxid(), time.Now().UnixMilli())
		s.commit(x, trig)
	}
	c.replyThenClose(xid, s.tree.LastZxid(), wire.ErrOk)
	s.mu.Unlock()
	s.sessions.Remove(id)
	c.sessionID.Store(0)
	return closeAfterReply
}

// replyThenClose queues a bare reply that closes the connection once sent.
func (c *conn) replyThenClose(xid int32, zxid int64, code wire.ErrCode) {
	c.enqueue(outFrame{b: wire.AppendFrame(nil, &wire.ReplyHeader{Xid: xid, Zxid: zxid, Err: code}), tag: zxid, closeAfter: true, reply: true})
	c.stats.sent.Add(1)
	c.s.stats.sent.Add(1)
}

func (c *conn) whoAmI() *wire.WhoAmIResponse {
	resp := &wire.WhoAmIResponse{Clients: []wire.ClientInfo{}}
	for _, id := range c.authIDs() {
		user := id.ID
		if id.Scheme == "digest" {
			user, _, _ = strings.Cut(id.ID, ":")
		}
		resp.Clients = append(resp.Clients, wire.ClientInfo{AuthScheme: id.Scheme, User: user})
	}
	return resp
}
