// Package follow ingests the scheduler's record stream into a store: over
// the stream's client (package stream) it lists, then watches from the last
// sequence it stored, relists on 410 Gone counting the records lost in the
// gap, starts over when the stream's epoch changes, and reconnects with
// backoff while the scheduler is away. The scheduler never waits for it.
package follow
