-- Second pass on payments.

-- Refused deliveries are counted per minute, reason and IP, in memory first and
-- flushed about once a second: a flood of junk costs the database a few writes,
-- not one per request. Earlier single rows are folded into the new shape.
ALTER TABLE gwa_webhook_rejections RENAME TO gwa_webhook_rejections_old;
CREATE TABLE gwa_webhook_rejections (
    minute     timestamptz NOT NULL,
    reason     text NOT NULL,
    ip         text NOT NULL,
    n          bigint NOT NULL,
    body_bytes bigint NOT NULL,
    last_at    timestamptz NOT NULL,
    PRIMARY KEY (minute, reason, ip)
);
CREATE INDEX gwa_webhook_rejections_last_idx ON gwa_webhook_rejections (last_at DESC);
INSERT INTO gwa_webhook_rejections (minute, reason, ip, n, body_bytes, last_at)
SELECT date_trunc('minute', received_at), reason, ip, count(*), sum(body_bytes), max(received_at)
FROM gwa_webhook_rejections_old GROUP BY 1, 2, 3;
DROP TABLE gwa_webhook_rejections_old;

-- An amount is what the column holds: up to 18 integer digits and 2 decimals.
-- Anything else stays only in the raw payload (as the receiver now does).
ALTER TABLE gwa_webhooks ALTER COLUMN amount TYPE numeric(20, 2)
    USING CASE WHEN abs(amount) < 1e18 AND amount = round(amount, 2) THEN amount END;

-- A stored notification is never updated: processing records itself in a narrow
-- table. Marking the wide row processed rewrote it whole and, when the page had no
-- room, added an entry to each of its seven indexes: three times the cost of
-- storing the notification. Reprocessing deletes the row here.
CREATE TABLE gwa_webhook_processed (
    webhook_id   bigint PRIMARY KEY,
    processed_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO gwa_webhook_processed (webhook_id, processed_at)
SELECT id, COALESCE(processed_at, now()) FROM gwa_webhooks WHERE processed;
ALTER TABLE gwa_webhooks DROP COLUMN processed, DROP COLUMN processed_at;

-- The outcome names the notification that set it; a foreign key would lock that
-- row for every outcome written, for nothing: notifications are never deleted.
ALTER TABLE gwa_reference_outcomes DROP CONSTRAINT gwa_reference_outcomes_webhook_id_fkey;
