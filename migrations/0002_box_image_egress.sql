-- What a box booted from and its egress policy, so that a warm pool box is
-- only handed to a request it fits.
ALTER TABLE boxes ADD COLUMN image TEXT NOT NULL DEFAULT '';
ALTER TABLE boxes ADD COLUMN egress TEXT NOT NULL DEFAULT '';
CREATE INDEX boxes_session ON boxes (session_id) WHERE session_id <> '';
