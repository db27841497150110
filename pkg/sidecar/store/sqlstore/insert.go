package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/schedscope/schedscope/pkg/sidecar/store"
)

// inserts are the statements that store records and the cursor, prepared
// once: each connection prepares them on its first use.
type inserts struct {
	attempt, pod, rejection, shadow, cursor *sql.Stmt
	// latest finds whether a record was folded already and its pod's
	// latest attempt; fold folds a repeat into that attempt and touch
	// moves the pod's finish time to the repeat's.
	latest, fold, touch *sql.Stmt
}

// FoldQuery returns the query, in d's SQL, that finds whether sequence
// seq of epoch was folded into an attempt of the pod of UID uid in cluster
// already, and that pod's latest attempt (id 0 when it has none). Its
// parameters are cluster, uid, epoch, seq, seq, cluster, uid.
func (d *Dialect) FoldQuery() string {
	// The pod's attempts are few, its epoch's are many: the planner must
	// not walk the epoch's by UNIQUE (cluster, epoch, seq), every earlier
	// record of the epoch for every record stored.
	return d.bind(`SELECT EXISTS (SELECT 1 FROM attempts` + d.indexedBy("attempts_by_pod_epoch") + `
			WHERE cluster = ? AND uid = ? AND epoch = ? AND seq < ? AND last_seq >= ?),
		COALESCE(a.id, 0), COALESCE(a.epoch, ''), COALESCE(a.seq, 0), COALESCE(a.last_seq, 0), a.signature
	FROM (SELECT 1) AS one LEFT JOIN pods p ON p.cluster = ? AND p.uid = ? LEFT JOIN attempts a ON a.id = p.latest_id`)
}

func (ins *inserts) prepare(ctx context.Context, db *sql.DB, d *Dialect) error {
	for _, st := range []struct {
		stmt       **sql.Stmt
		what, text string
	}{
		{&ins.attempt, "insert", `INSERT INTO attempts
			(cluster, epoch, seq, uid, namespace, name, attempt, result, finished, size, summary, data, signature)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (cluster, epoch, seq) DO NOTHING RETURNING id`},
		{&ins.pod, "pod upsert", `INSERT INTO pods (cluster, uid, namespace, name, first_seen, latest_id, finished, result)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (cluster, uid) DO UPDATE SET namespace = excluded.namespace, name = excluded.name,
				latest_id = excluded.latest_id, finished = excluded.finished, result = excluded.result
			WHERE excluded.latest_id > pods.latest_id`},
		{&ins.rejection, "rejection insert", `INSERT INTO rejections (cluster, attempt_id, finished, namespace, plugin, nodes, node_names)
			VALUES (?, ?, ?, ?, ?, ?, ?)`},
		{&ins.shadow, "shadow run insert", `INSERT INTO shadow_runs
			(cluster, attempt_id, finished, namespace, profile, shadow, outcome, not_compared_reason, plugin)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&ins.cursor, "cursor upsert", `INSERT INTO cursors (cluster, epoch, seq, lost) VALUES (?, ?, ?, ?)
			ON CONFLICT (cluster) DO UPDATE SET epoch = excluded.epoch, seq = excluded.seq, lost = excluded.lost`},
		{&ins.latest, "latest attempt query", d.FoldQuery()},
		{&ins.fold, "fold", `UPDATE attempts SET repeats = repeats + 1, last_attempt = ?, last_seq = ?, last_finished = ? WHERE id = ?`},
		{&ins.touch, "pod update", `UPDATE pods SET finished = ? WHERE cluster = ? AND uid = ?`},
	} {
		var err error
		if *st.stmt, err = db.PrepareContext(ctx, d.bind(st.text)); err != nil {
			return fmt.Errorf("preparing %s: %w", st.what, err)
		}
	}
	return nil
}

func (ins *inserts) close() {
	for _, st := range []*sql.Stmt{ins.attempt, ins.pod, ins.rejection, ins.shadow, ins.cursor, ins.latest, ins.fold, ins.touch} {
		if st != nil {
			st.Close()
		}
	}
}

// in returns the statements in tx, storing cluster's records.
func (ins *inserts) in(ctx context.Context, tx *sql.Tx, cluster string) *txInserts {
	return &txInserts{
		cluster: cluster,
		inserts: inserts{
			attempt: tx.StmtContext(ctx, ins.attempt), pod: tx.StmtContext(ctx, ins.pod),
			rejection: tx.StmtContext(ctx, ins.rejection), shadow: tx.StmtContext(ctx, ins.shadow), cursor: tx.StmtContext(ctx, ins.cursor),
			latest: tx.StmtContext(ctx, ins.latest), fold: tx.StmtContext(ctx, ins.fold), touch: tx.StmtContext(ctx, ins.touch),
		},
	}
}

// txInserts are the statements of a transaction storing cluster's records.
type txInserts struct {
	cluster string
	inserts
}

// insert stores a record, its pod, its rejections and its shadow runs; a
// record already stored is left alone, and a repeat of the pod's latest
// unschedulable outcome is folded into it.
func (w *txInserts) insert(ctx context.Context, epoch string, r store.Row) error {
	a := r.Attempt
	if folded, err := w.foldRepeat(ctx, epoch, r); folded || err != nil {
		return err
	}
	var id int64
	err := w.attempt.QueryRowContext(ctx, w.cluster, epoch, int64(r.Seq), a.Pod.UID, a.Pod.Namespace, a.Pod.Name,
		a.Attempt, string(a.Result), r.Finished, len(r.Data), string(r.Summary), r.Data, r.Signature).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // already stored
	}
	if err != nil {
		return fmt.Errorf("storing record %d: %w", r.Seq, err)
	}
	if _, err := w.pod.ExecContext(ctx, w.cluster, a.Pod.UID, a.Pod.Namespace, a.Pod.Name, r.Finished, id, r.Finished, string(a.Result)); err != nil {
		return fmt.Errorf("indexing pod of record %d: %w", r.Seq, err)
	}
	return w.index(ctx, id, r)
}

// index stores the rejections and shadow runs of r's attempt under
// attempt id.
func (w *txInserts) index(ctx context.Context, id int64, r store.Row) error {
	if err := w.indexRejections(ctx, id, r); err != nil {
		return err
	}
	a := r.Attempt
	for _, sh := range r.Shadows {
		if _, err := w.shadow.ExecContext(ctx, w.cluster, id, r.Finished, a.Pod.Namespace, a.Profile,
			sh.Shadow, string(sh.Outcome), sh.NotComparedReason, sh.Plugin); err != nil {
			return fmt.Errorf("indexing shadow runs of record %d: %w", r.Seq, err)
		}
	}
	return nil
}

// indexRejections stores the rejections of r's attempt under attempt id.
func (w *txInserts) indexRejections(ctx context.Context, id int64, r store.Row) error {
	for _, rj := range r.Rejected {
		if _, err := w.rejection.ExecContext(ctx, w.cluster, id, r.Finished, r.Attempt.Pod.Namespace, rj.Plugin, rj.Nodes, rj.Names); err != nil {
			return fmt.Errorf("indexing rejections of record %d: %w", r.Seq, err)
		}
	}
	return nil
}

// foldRepeat folds r into its pod's latest attempt when both were
// unschedulable with the same outcome in the same epoch: the attempt's
// repeat count and last attempt move on, its record is not stored again,
// and r's rejections and shadow runs are indexed (they count in the
// rejection totals and the shadow summaries).
// A repeat already folded is left alone. folded is false when r is not a
// repeat.
func (w *txInserts) foldRepeat(ctx context.Context, epoch string, r store.Row) (folded bool, err error) {
	if r.Signature == nil {
		return false, nil
	}
	a := r.Attempt
	var before bool
	var id, seq, lastSeq int64
	var latestEpoch string
	var sig []byte
	if err := w.latest.QueryRowContext(ctx, w.cluster, a.Pod.UID, epoch, int64(r.Seq), int64(r.Seq), w.cluster, a.Pod.UID).
		Scan(&before, &id, &latestEpoch, &seq, &lastSeq, &sig); err != nil {
		return false, fmt.Errorf("reading the latest attempt of pod %s: %w", a.Pod.UID, err)
	}
	switch {
	case before:
		return true, nil // folded before
	case id == 0 || latestEpoch != epoch || !bytes.Equal(sig, r.Signature):
		return false, nil
	case int64(r.Seq) <= max(seq, lastSeq):
		return true, nil // already stored or folded
	}
	if _, err := w.fold.ExecContext(ctx, a.Attempt, int64(r.Seq), r.Finished, id); err != nil {
		return false, fmt.Errorf("folding record %d: %w", r.Seq, err)
	}
	if _, err := w.touch.ExecContext(ctx, r.Finished, w.cluster, a.Pod.UID); err != nil {
		return false, fmt.Errorf("indexing pod of record %d: %w", r.Seq, err)
	}
	return true, w.index(ctx, id, r)
}
