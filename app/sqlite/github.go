package sqlite

import (
	"context"
	"time"

	"github.com/asb-dev/asb/app"
)

// Delivery is one stored GitHub webhook delivery.
type Delivery struct {
	ID         string `db:"id"`
	Event      string `db:"event"`
	Action     string `db:"action"`
	Payload    []byte `db:"payload"`
	ReceivedAt string `db:"received_at"`
}

// RecordDelivery stores a webhook delivery once. It reports false, and
// stores nothing, when the delivery id was seen before: redeliveries and
// retries are not processed twice.
func (s *Store) RecordDelivery(ctx context.Context, id, event, action string, payload []byte, at time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx, `INSERT INTO webhook_deliveries (id, event, action, payload, received_at)
		VALUES (?,?,?,?,?) ON CONFLICT (id) DO NOTHING`, id, event, action, payload, fmtTime(at))
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// MarkDeliveryProcessed records that a delivery was handled (errText
// empty) or failed for good.
func (s *Store) MarkDeliveryProcessed(ctx context.Context, id string, at time.Time, errText string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE webhook_deliveries SET processed_at = ?, error = ? WHERE id = ?`, fmtTime(at), errText, id)
	return rowsOrNotFound(res, mapErr(err), "delivery", id)
}

// PendingDeliveries returns deliveries accepted but not processed, oldest
// first: the work a restarted controller picks up.
func (s *Store) PendingDeliveries(ctx context.Context, limit int) ([]Delivery, error) {
	if limit <= 0 {
		limit = 100
	}
	var out []Delivery
	err := s.db.SelectContext(ctx, &out, `SELECT id, event, action, payload, received_at FROM webhook_deliveries
		WHERE processed_at = '' ORDER BY received_at, id LIMIT ?`, limit)
	return out, mapErr(err)
}

// Cursor returns a poller's stored position and ETag for key.
func (s *Store) Cursor(ctx context.Context, key string) (value, etag string, err error) {
	var row struct {
		Value string `db:"value"`
		ETag  string `db:"etag"`
	}
	err = mapErr(s.db.GetContext(ctx, &row, `SELECT value, etag FROM poll_cursors WHERE key = ?`, key))
	if app.ErrorCode(err) == app.ENOTFOUND {
		return "", "", nil
	}
	return row.Value, row.ETag, err
}

// PutCursor stores a poller's position and ETag for key.
func (s *Store) PutCursor(ctx context.Context, key, value, etag string, at time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO poll_cursors (key, value, etag, updated_at) VALUES (?,?,?,?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, etag = excluded.etag, updated_at = excluded.updated_at`,
		key, value, etag, fmtTime(at))
	return mapErr(err)
}
