package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Run applies the retention (Retain) at once and then every interval (a
// minute when 0) until ctx ends. A failed run is logged and counted in
// Stats().RetainErrors; the next one tries again.
func (s *Store) Run(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := s.Retain(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("monitor store retention failed", "path", s.path, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Retain folds every complete hour of rows older than RawRetention into
// hourly rows, one per stream (sums of the counts and bytes, maxima of the
// max.* values, the average of the concurrency, the merged histogram),
// dropping the hour's minute sums, and deletes hourly rows and sums older
// than RollupRetention together with the streams no row is left of.
//
// Each hour of each interface is folded in one transaction that also
// deletes its rows and records that the hour is done, so a run interrupted
// anywhere leaves each hour either folded or untouched, never counted
// twice; a second run changes nothing. Inserts wait for one interface's
// hour at a time, not for the whole run.
func (s *Store) Retain(ctx context.Context) error {
	now := s.opts.Now().Unix()
	cutoff := (now - int64(s.opts.RawRetention/time.Second)) / hour * hour
	horizon := now - int64(s.opts.RollupRetention/time.Second)
	var hours, rows int64
	err := func() error {
		var ids []int64
		err := s.read(ctx, func(tx *sql.Tx) error {
			r, err := tx.QueryContext(ctx, `SELECT id FROM interfaces`)
			if err != nil {
				return err
			}
			defer r.Close()
			for r.Next() {
				var id int64
				if err := r.Scan(&id); err != nil {
					return err
				}
				ids = append(ids, id)
			}
			return r.Err()
		})
		if err != nil {
			return fmt.Errorf("list interfaces: %w", err)
		}
		for _, id := range ids {
			for {
				n, done, err := s.foldOldestHour(ctx, id, cutoff)
				if err != nil {
					return err
				}
				if done {
					break
				}
				hours++
				rows += n
			}
		}
		return nil
	}()
	var expired, forgotten int64
	if err == nil {
		expired, forgotten, err = s.expire(ctx, horizon, hours > 0)
	}
	s.count(func(st *Stats) {
		st.RolledUp += rows
		st.HourlyExpired += expired
		if err != nil {
			st.RetainErrors++
		} else {
			st.RetainRuns++
		}
	})
	if hours > 0 || expired > 0 {
		s.log.Info("monitor store retention", "path", s.path, "hours_rolled_up", hours, "rows_rolled_up", rows,
			"hourly_rows_expired", expired, "streams_forgotten", forgotten)
	}
	if err != nil {
		return fmt.Errorf("monitor store %s: retention: %w", s.path, err)
	}
	return nil
}

// foldOldestHour folds the hour of interface id's oldest row if it ends by
// cutoff, and says how many rows it folded, or done when there is no such
// hour.
func (s *Store) foldOldestHour(ctx context.Context, id, cutoff int64) (rows int64, done bool, err error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, err
	}
	defer tx.Rollback()
	var oldest sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MIN(time) FROM raw WHERE interface_id = ?`, id).Scan(&oldest); err != nil {
		return 0, false, fmt.Errorf("find the oldest row: %w", err)
	}
	if !oldest.Valid || hourEnd(oldest.Int64) > cutoff {
		return 0, true, nil
	}
	h := hourEnd(oldest.Int64)
	// Rows of the hour ending at h: time in (h-3600, h]. The INSERTs have
	// no ON CONFLICT: an hour is folded once (later rows for it are refused
	// as stale), and a conflict would mean a double count, so it fails the
	// transaction instead.
	// The hour's sums of longer spans are kept up to date by Insert.
	const span = `interface_id = ?1 AND time > ?3 AND time <= ?2`
	type step struct {
		what, sql string
		n         *int64
	}
	steps := []step{
		{"fold rows", `INSERT INTO hourly (interface_id, time, stream_id, success, failure, input, output, elapsed, max_elapsed, concurrent, max_concurrent, max_input, max_output, histogram)
			SELECT ?1, ?2, stream_id, SUM(success), SUM(failure), SUM(input), SUM(output), SUM(elapsed),
				MAX(max_elapsed), AVG(concurrent), MAX(max_concurrent), MAX(max_input), MAX(max_output),
				dubbo_histogram(unhex(group_concat(hex(histogram), '')))
			FROM raw WHERE ` + span + ` GROUP BY stream_id`, nil},
		{"delete rows", `DELETE FROM raw WHERE ` + span, &rows},
	}
	for _, t := range sumTables {
		steps = append(steps, step{"delete " + t.table + " by minute", `DELETE FROM ` + t.table + ` WHERE span = 60 AND ` + span, nil})
	}
	for _, st := range steps {
		res, err := tx.ExecContext(ctx, st.sql, id, h, h-hour)
		if err != nil {
			return 0, false, fmt.Errorf("hour ending %s: %s: %w", time.Unix(h, 0).UTC().Format(time.RFC3339), st.what, err)
		}
		if st.n != nil {
			*st.n, _ = res.RowsAffected()
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE interfaces SET rolled_through = ? WHERE id = ?`, h, id); err != nil {
		return 0, false, fmt.Errorf("hour ending %s: mark it folded: %w", time.Unix(h, 0).UTC().Format(time.RFC3339), err)
	}
	if err := tx.Commit(); err != nil {
		return 0, false, err
	}
	for _, ifc := range s.ifaces {
		if ifc.id == id {
			ifc.rolled = h
		}
	}
	return rows, false, nil
}

// expire deletes hourly rows and sums ending at or before horizon, then, if that
// deleted any or hours were just folded (only then can a stream have lost
// its last row), the streams and interfaces no row refers to any more.
func (s *Store) expire(ctx context.Context, horizon int64, folded bool) (rows, streams int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `DELETE FROM hourly WHERE interface_id IN (SELECT id FROM interfaces) AND time <= ?`, horizon)
	if err != nil {
		return 0, 0, fmt.Errorf("expire hourly rows: %w", err)
	}
	rows, _ = res.RowsAffected()
	for _, t := range sumTables {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+t.table+` WHERE interface_id IN (SELECT id FROM interfaces) AND span IN (60, 3600, 86400) AND time <= ?`, horizon); err != nil {
			return 0, 0, fmt.Errorf("expire %s: %w", t.table, err)
		}
	}
	if rows > 0 || folded {
		// A stream's rows all end by its last hour: once that hour is both
		// folded and expired, none is left.
		res, err := tx.ExecContext(ctx, `DELETE FROM streams WHERE last <= ? AND last <= (SELECT rolled_through FROM interfaces WHERE id = streams.interface_id)`, horizon)
		if err != nil {
			return 0, 0, fmt.Errorf("expire streams: %w", err)
		}
		streams, _ = res.RowsAffected()
	}
	if streams > 0 {
		// An interface goes with its last stream, and so do its sums of
		// days that end after the horizon: its id may be given again.
		for _, t := range sumTables {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+t.table+` WHERE interface_id IN
				(SELECT id FROM interfaces WHERE NOT EXISTS (SELECT 1 FROM streams WHERE interface_id = interfaces.id))`); err != nil {
				return 0, 0, fmt.Errorf("expire %s: %w", t.table, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM interfaces WHERE NOT EXISTS (SELECT 1 FROM streams WHERE interface_id = interfaces.id)`); err != nil {
			return 0, 0, fmt.Errorf("expire interfaces: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, err
	}
	if streams > 0 {
		// Found again from the database when next reported.
		clear(s.streams)
		clear(s.ifaces)
	}
	return rows, streams, nil
}
