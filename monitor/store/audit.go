package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// The audit table: every change the console makes to a rule (who, when,
// what, the document before and after), so that a rule's history can be
// shown and an earlier version restored. It is apart from the
// statistics: nothing of retention touches it.

// auditMigration creates the audit table; it is one step of migrations.
const auditMigration = `CREATE TABLE rule_changes (
	id INTEGER PRIMARY KEY,
	time INTEGER NOT NULL,   -- Unix milliseconds
	who TEXT NOT NULL,
	client TEXT NOT NULL,    -- the address the change came from
	kind TEXT NOT NULL,      -- condition, tag, override, affinity, script
	key TEXT NOT NULL,       -- the rule's key
	action TEXT NOT NULL,
	old TEXT,                -- NULL: there was no document
	new TEXT                 -- NULL: the document was deleted
);
CREATE INDEX rule_changes_by_rule ON rule_changes (kind, key, id);`

// Change is one change of a rule.
type Change struct {
	ID     int64  `json:"id"`
	Time   int64  `json:"time"` // Unix milliseconds
	Who    string `json:"who"`
	Client string `json:"client"`
	Kind   string `json:"kind"`
	Key    string `json:"key"`
	// Action says what was done ("save", "delete", "disable", "weight of
	// 10.0.0.1:20880", "restore #12", ...).
	Action string `json:"action"`
	// Old and New are the document before and after; nil for none.
	Old *string `json:"old"`
	New *string `json:"new"`
}

// ErrNoChange is returned for a change id that is not stored.
var ErrNoChange = errors.New("no such change")

// RecordChange stores c (its ID and, when zero, its Time are set here)
// and returns its id.
func (s *Store) RecordChange(ctx context.Context, c Change) (int64, error) {
	if c.Time == 0 {
		c.Time = s.opts.Now().UnixMilli()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res, err := s.wdb.ExecContext(ctx, `INSERT INTO rule_changes (time, who, client, kind, key, action, old, new) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		c.Time, c.Who, c.Client, c.Kind, c.Key, c.Action, nullable(c.Old), nullable(c.New))
	if err != nil {
		return 0, fmt.Errorf("record the change of %s rule %s: %w", c.Kind, c.Key, err)
	}
	return res.LastInsertId()
}

// Changes lists the changes of the rule of kind at key, newest first, at
// most limit (0: all).
func (s *Store) Changes(ctx context.Context, kind, key string, limit int) ([]Change, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT id, time, who, client, kind, key, action, old, new FROM rule_changes
		WHERE kind = ? AND key = ? ORDER BY id DESC LIMIT ?`, kind, key, limit)
	if err != nil {
		return nil, fmt.Errorf("changes of %s rule %s: %w", kind, key, err)
	}
	defer rows.Close()
	out := []Change{}
	for rows.Next() {
		c, err := scanChange(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// ChangeByID returns one change; the error wraps ErrNoChange when it is
// not stored.
func (s *Store) ChangeByID(ctx context.Context, id int64) (Change, error) {
	row := s.rdb.QueryRowContext(ctx, `SELECT id, time, who, client, kind, key, action, old, new FROM rule_changes WHERE id = ?`, id)
	c, err := scanChange(row)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("change %d: %w", id, ErrNoChange)
	}
	return c, err
}

func scanChange(r interface{ Scan(...any) error }) (Change, error) {
	var c Change
	var before, after sql.NullString
	if err := r.Scan(&c.ID, &c.Time, &c.Who, &c.Client, &c.Kind, &c.Key, &c.Action, &before, &after); err != nil {
		return c, err
	}
	if before.Valid {
		c.Old = &before.String
	}
	if after.Valid {
		c.New = &after.String
	}
	return c, nil
}

func nullable(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
