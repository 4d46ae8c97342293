-- The read-only co-pilot's thread in a session's box.
ALTER TABLE sessions ADD COLUMN ask_session_id TEXT NOT NULL DEFAULT '';
