package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"k8s.io/klog/v2"
)

// TxBeginner is a database or one of its connections.
type TxBeginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// RemoveSilentClusters notes in the cursors that cluster own's writer is
// alive at now and, when silence is positive, removes every record of the
// other clusters whose writer has not been alive since silence before now:
// their attempts, pods, rejection and shadow rows and their cursor. A
// cursor no writer has noted yet (one of a schema before the note) is
// noted alive at now. It returns the number of attempts removed.
func RemoveSilentClusters(ctx context.Context, db TxBeginner, d *Dialect, own string, now time.Time, silence time.Duration) (attempts int, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("removing silent clusters: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, d.bind(`UPDATE cursors SET seen = ? WHERE cluster = ? OR seen = 0`), now.UnixNano(), own); err != nil {
		return 0, fmt.Errorf("noting cluster %q alive: %w", own, err)
	}
	var clusters []string
	if silence > 0 {
		if clusters, err = silentClusters(ctx, tx, d, own, now.Add(-silence)); err != nil {
			return 0, err
		}
	}
	var removed []string
	for _, c := range clusters {
		// A cluster's writer role (cluster_writers) deletes none of
		// another cluster's rows: only the tables' owner removes them.
		var deleted int64
		for _, table := range []string{"rejections", "shadow_runs", "pods", "attempts", "cursors"} {
			res, err := tx.ExecContext(ctx, d.bind(`DELETE FROM `+table+` WHERE cluster = ?`), c)
			if err != nil {
				return 0, fmt.Errorf("removing silent cluster %q's %s: %w", c, table, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return 0, fmt.Errorf("removing silent cluster %q's %s: %w", c, table, err)
			}
			if table == "attempts" {
				attempts += int(n)
			}
			deleted += n
		}
		if deleted > 0 {
			removed = append(removed, c)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("removing silent clusters: %w", err)
	}
	if len(removed) > 0 {
		klog.FromContext(ctx).Info("Removed the records of clusters whose writer has been silent", "clusters", removed, "silentFor", silence, "attempts", attempts)
	}
	return attempts, nil
}

// silentClusters returns the clusters but own whose writer was last alive
// before since.
func silentClusters(ctx context.Context, tx *sql.Tx, d *Dialect, own string, since time.Time) ([]string, error) {
	rows, err := tx.QueryContext(ctx, d.bind(`SELECT cluster FROM cursors WHERE cluster <> ? AND seen < ? ORDER BY cluster`), own, since.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("finding silent clusters: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, fmt.Errorf("finding silent clusters: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
