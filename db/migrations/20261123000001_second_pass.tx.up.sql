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
