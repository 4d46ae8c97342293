-- Which GitHub delivery and comment answered a question, so the same
-- comment is never used twice (redelivery, poller, restart).
ALTER TABLE questions ADD COLUMN answer_delivery TEXT NOT NULL DEFAULT '';
ALTER TABLE questions ADD COLUMN answer_comment INTEGER NOT NULL DEFAULT 0;
