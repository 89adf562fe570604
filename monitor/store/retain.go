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
		return s.rollSums(ctx, cutoff)
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
	var h int64
	err = s.writeStep(ctx, func(tx *sql.Tx) error {
		var oldest sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MIN(time) FROM raw WHERE interface_id = ?`, id).Scan(&oldest); err != nil {
			return fmt.Errorf("find the oldest row: %w", err)
		}
		if done = !oldest.Valid || hourEnd(oldest.Int64) > cutoff; done {
			return nil
		}
		h = hourEnd(oldest.Int64)
		// Rows of the hour ending at h: time in (h-3600, h]. The INSERT has
		// no ON CONFLICT: an hour is folded once (later rows for it are
		// refused as stale), and a conflict would mean a double count, so
		// it fails the transaction instead.
		const span = `interface_id = ?1 AND time > ?3 AND time <= ?2`
		for _, st := range []struct {
			what, sql string
			n         *int64
		}{
			{"fold rows", `INSERT INTO hourly (interface_id, time, stream_id, success, failure, input, output, elapsed, max_elapsed, concurrent, max_concurrent, max_input, max_output, histogram)
				SELECT ?1, ?2, stream_id, SUM(success), SUM(failure), SUM(input), SUM(output), SUM(elapsed),
					MAX(max_elapsed), AVG(concurrent), MAX(max_concurrent), MAX(max_input), MAX(max_output),
					dubbo_histogram(` + concatHistograms("histogram") + `)
				FROM raw WHERE ` + span + ` GROUP BY stream_id`, nil},
			{"delete rows", `DELETE FROM raw WHERE ` + span, &rows},
			{"mark it folded", `UPDATE interfaces SET rolled_through = ?2 WHERE id = ?1`, nil},
		} {
			res, err := tx.ExecContext(ctx, st.sql, id, h, h-hour)
			if err != nil {
				return fmt.Errorf("hour ending %s: %s: %w", time.Unix(h, 0).UTC().Format(time.RFC3339), st.what, err)
			}
			if st.n != nil {
				*st.n, _ = res.RowsAffected()
			}
		}
		return nil
	}, func() {
		for _, ifc := range s.ifaces {
			if ifc.id == id && !done {
				ifc.rolled = h
			}
		}
	})
	return rows, done, err
}

// rollSums makes the hours' sums answer for their minutes up to cutoff
// (sum_rollup), and then deletes those minutes' sums, a level and an hour
// at a time: no read counts them any more, and inserts wait for little.
func (s *Store) rollSums(ctx context.Context, cutoff int64) error {
	err := s.writeStep(ctx, func(tx *sql.Tx) error {
		if cutoff <= s.sumsRolled {
			return nil
		}
		_, err := tx.ExecContext(ctx, `UPDATE sum_rollup SET rolled_through = ?`, cutoff)
		return err
	}, func() { s.sumsRolled = max(s.sumsRolled, cutoff) })
	if err != nil {
		return fmt.Errorf("roll up the sums through %s: %w", time.Unix(cutoff, 0).UTC().Format(time.RFC3339), err)
	}
	for _, l := range levels {
		for done := false; !done; {
			err := s.writeStep(ctx, func(tx *sql.Tx) error {
				var oldest sql.NullInt64
				if err := tx.QueryRowContext(ctx, `SELECT MIN(time) FROM sums WHERE level = ? AND span = 60`, l.id).Scan(&oldest); err != nil {
					return err
				}
				if done = !oldest.Valid || oldest.Int64 > s.sumsRolled; done {
					return nil
				}
				_, err := tx.ExecContext(ctx, `DELETE FROM sums WHERE level = ? AND span = 60 AND time <= ?`, l.id, min(hourEnd(oldest.Int64), s.sumsRolled))
				return err
			}, nil)
			if err != nil {
				return fmt.Errorf("delete the rolled-up minute sums of level %d: %w", l.id, err)
			}
		}
	}
	return nil
}

// writeStep runs f in a write transaction, with s.mu held, and then,
// once it committed, applied.
func (s *Store) writeStep(ctx context.Context, f func(*sql.Tx) error, applied func()) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if applied != nil {
		applied()
	}
	return nil
}

// expire deletes hourly rows and sums ending at or before horizon, then, if that
// deleted any or hours were just folded (only then can a stream have lost
// its last row), the streams, sum keys and interfaces no row refers to
// any more.
func (s *Store) expire(ctx context.Context, horizon int64, folded bool) (rows, streams int64, err error) {
	var keys int64
	err = s.writeStep(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM hourly WHERE interface_id IN (SELECT id FROM interfaces) AND time <= ?`, horizon)
		if err != nil {
			return fmt.Errorf("expire hourly rows: %w", err)
		}
		rows, _ = res.RowsAffected()
		// Sums of rows older than the horizon: those that end by it, and the
		// days after it of such rows only. One range of the key per level and
		// span.
		for _, q := range []string{`DELETE FROM sums WHERE level IN (` + levelIDs() + `) AND span IN (60, 3600, 86400) AND time <= ?1`,
			`DELETE FROM sums WHERE level IN (` + levelIDs() + `) AND span = 86400 AND time > ?1 AND time < ?1 + 86400 AND last <= ?1`} {
			if _, err := tx.ExecContext(ctx, q, horizon); err != nil {
				return fmt.Errorf("expire sums: %w", err)
			}
		}
		if rows == 0 && !folded {
			return nil
		}
		// A stream's rows all end by its last hour: once that hour is both
		// folded and expired, none is left; a key's sums neither.
		if res, err = tx.ExecContext(ctx, `DELETE FROM streams WHERE last <= ? AND last <= (SELECT rolled_through FROM interfaces WHERE id = streams.interface_id)`, horizon); err != nil {
			return fmt.Errorf("expire streams: %w", err)
		}
		streams, _ = res.RowsAffected()
		if res, err = tx.ExecContext(ctx, `DELETE FROM sum_keys WHERE last <= ?`, horizon); err != nil {
			return fmt.Errorf("expire sum keys: %w", err)
		}
		keys, _ = res.RowsAffected()
		if streams > 0 {
			// An interface goes with its last stream (its sums and their
			// keys are gone: their rows were all older than the horizon).
			if _, err := tx.ExecContext(ctx, `DELETE FROM interfaces WHERE NOT EXISTS (SELECT 1 FROM streams WHERE interface_id = interfaces.id)`); err != nil {
				return fmt.Errorf("expire interfaces: %w", err)
			}
		}
		return nil
	}, func() {
		if streams > 0 || keys > 0 {
			// Found again from the database when next reported.
			clear(s.streams)
			clear(s.keys)
			clear(s.ifaces)
		}
	})
	return rows, streams, err
}
