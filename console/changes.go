package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/dubbo-lab/dubbo/console/rules"
	"github.com/dubbo-lab/dubbo/monitor/store"
)

// Every change of a rule goes through putRule or deleteRule: checked,
// written to the config center, recorded in the audit table (Options.Audit:
// who, from where, what was done, the document before and after), and
// awaited in the console's own copy of the registry, so that the page
// shown next shows it. A rule's history lists its changes; restore puts
// an earlier version back, as one more change.

// historyLimit bounds the changes a rule's page lists.
const historyLimit = 50

var errNoAudit = &apiErr{http.StatusServiceUnavailable, kindNoHistory, "no history: the console runs without the monitor's store, where changes are recorded"}

// putRule checks and stores a rule; action says what was done, for its
// history.
func (c *Console) putRule(ctx context.Context, kind, key string, doc []byte, action string) ([]byte, error) {
	norm, err := rules.Normalize(kind, key, doc)
	if err != nil {
		return nil, err
	}
	ck := rules.ConfigKey(kind, key)
	old, existed, err := c.rules.GetConfig(ctx, ck)
	if err != nil {
		return nil, err
	}
	if err := c.rules.PublishConfig(ctx, ck, string(norm)); err != nil {
		return nil, err
	}
	after := string(norm)
	if !existed || old != after {
		c.record(ctx, kind, key, action, optionalDoc(old, existed), &after)
	}
	c.waitRule(ck, after, true)
	return norm, nil
}

// deleteRule deletes a rule; action says why, for its history.
func (c *Console) deleteRule(ctx context.Context, kind, key, action string) error {
	if err := rules.CheckKey(kind, key); err != nil {
		return err
	}
	ck := rules.ConfigKey(kind, key)
	old, ok, err := c.rules.GetConfig(ctx, ck)
	if err != nil {
		return err
	}
	if !ok {
		return notFound("no %s rule %s", kind, key)
	}
	if err := c.rules.DeleteConfig(ctx, ck); err != nil {
		return err
	}
	c.record(ctx, kind, key, action, &old, nil)
	c.waitRule(ck, "", false)
	return nil
}

func (c *Console) setRuleEnabled(ctx context.Context, kind, key string, on bool) ([]byte, error) {
	doc, err := c.getRule(ctx, kind, key)
	if err != nil {
		return nil, err
	}
	out, err := rules.SetEnabled(kind, key, []byte(doc), on)
	if err != nil {
		return nil, err
	}
	action := "disable"
	if on {
		action = "enable"
	}
	return c.putRule(ctx, kind, key, out, action)
}

func optionalDoc(doc string, ok bool) *string {
	if !ok {
		return nil
	}
	return &doc
}

// record adds a change to the audit table. The change is made already: a
// failure to record it is logged, not returned.
func (c *Console) record(ctx context.Context, kind, key, action string, before, after *string) {
	if c.opts.Audit == nil {
		return
	}
	a := actorIn(ctx)
	_, err := c.opts.Audit.RecordChange(context.WithoutCancel(ctx), store.Change{Who: a.Who, Client: a.Client, Kind: kind, Key: key,
		Action: action, Old: before, New: after})
	if err != nil {
		c.log.Warn("a rule change is not in its history", "kind", kind, "key", key, "action", action, "err", err)
	}
}

// history lists the changes of a rule, newest first.
func (c *Console) history(ctx context.Context, kind, key string) ([]store.Change, error) {
	if err := rules.CheckKey(kind, key); err != nil {
		return nil, err
	}
	if c.opts.Audit == nil {
		return nil, errNoAudit
	}
	return c.opts.Audit.Changes(ctx, kind, key, historyLimit)
}

// restore puts back the version of a rule that change id wrote (for a
// deletion, the version it deleted).
func (c *Console) restore(ctx context.Context, kind, key string, id int64) ([]byte, error) {
	if c.opts.Audit == nil {
		return nil, errNoAudit
	}
	ch, err := c.opts.Audit.ChangeByID(ctx, id)
	if errors.Is(err, store.ErrNoChange) {
		return nil, notFound("no change #%d in the history", id)
	}
	if err != nil {
		return nil, err
	}
	if ch.Kind != kind || ch.Key != key {
		return nil, badRequest("change #%d is of %s rule %s, not of %s rule %s", id, ch.Kind, ch.Key, kind, key)
	}
	doc := ch.New
	if doc == nil {
		doc = ch.Old
	}
	if doc == nil {
		return nil, badRequest("change #%d holds no version of the rule", id)
	}
	return c.putRule(ctx, kind, key, []byte(*doc), fmt.Sprintf("restore #%d", id))
}
