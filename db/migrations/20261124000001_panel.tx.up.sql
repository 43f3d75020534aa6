-- The Panel: figures of the last 24 h from small tables, never from a scan of
-- the notifications.

-- Notifications per UTC hour, status and currency (with the amount), kept by the
-- same statement-level trigger as gwa_webhook_counts: one more grouped upsert
-- per stored batch, not per row.
CREATE TABLE gwa_webhook_hourly (
    hour     timestamptz NOT NULL,
    status   text NOT NULL,
    currency text NOT NULL,
    slot     smallint NOT NULL,
    n        bigint NOT NULL,
    amount   numeric NOT NULL,
    PRIMARY KEY (hour, status, currency, slot)
);
-- No notification may be stored between the backfill and the new trigger.
LOCK TABLE gwa_webhooks IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO gwa_webhook_hourly (hour, status, currency, slot, n, amount)
SELECT date_trunc('hour', received_at, 'UTC'), status,
       CASE WHEN length(currency) <= 10 THEN upper(currency) ELSE '?' END, 0, count(*), COALESCE(sum(amount), 0)
FROM gwa_webhooks GROUP BY 1, 2, 3;

CREATE OR REPLACE FUNCTION gwa_webhook_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO gwa_webhook_counts (bucket, event, status, slot, n)
    SELECT id / 10000, event, status, pg_backend_pid() % 4, count(*) FROM new_rows
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (bucket, event, status, slot) DO UPDATE SET n = gwa_webhook_counts.n + EXCLUDED.n;
    -- A currency is not checked at the door: a long one is counted as '?'.
    INSERT INTO gwa_webhook_hourly (hour, status, currency, slot, n, amount)
    SELECT date_trunc('hour', received_at, 'UTC'), status,
           CASE WHEN length(currency) <= 10 THEN upper(currency) ELSE '?' END,
           pg_backend_pid() % 4, count(*), COALESCE(sum(amount), 0) FROM new_rows
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (hour, status, currency, slot) DO UPDATE
        SET n = gwa_webhook_hourly.n + EXCLUDED.n, amount = gwa_webhook_hourly.amount + EXCLUDED.amount;
    RETURN NULL;
END $$;

-- Attempts still pendiente, by age: the Panel counts those older than 30 minutes.
CREATE INDEX payment_attempts_pending_idx ON payment_attempts (created_at) WHERE status = 'pendiente';

-- Small console-wide settings an administrator changes from the pages.
CREATE TABLE console_settings (
    key        text PRIMARY KEY,
    value      text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
