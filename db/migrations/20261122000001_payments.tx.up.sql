-- Payments (CONTRACT 3): gateway settings, checkout-gateway webhooks, payment attempts,
-- subscription-gateway API tokens, idempotency and upstream call log.

-- One row per gateway field. Keys and secrets hold AES-GCM ciphertext (encrypted = true).
CREATE TABLE gateway_settings (
    gateway    text NOT NULL CHECK (gateway IN ('gwa', 'gwb')),
    field      text NOT NULL,
    value      bytea NOT NULL,
    encrypted  boolean NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (gateway, field)
);

-- Who changed which field when; never the value.
CREATE TABLE gateway_setting_changes (
    id         bigserial PRIMARY KEY,
    gateway    text NOT NULL,
    field      text NOT NULL,
    action     text NOT NULL CHECK (action IN ('set', 'cleared')),
    user_id    bigint REFERENCES users (id) ON DELETE SET NULL,
    user_email text NOT NULL,
    changed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX gateway_setting_changes_gateway_idx ON gateway_setting_changes (gateway, id DESC);

CREATE TABLE gwa_webhooks (
    id               bigserial PRIMARY KEY,
    notification_id  text NOT NULL,
    event            text NOT NULL,
    status           text NOT NULL,
    payment_id       text NOT NULL DEFAULT '',
    reference        text NOT NULL DEFAULT '',
    payer_email      text NOT NULL DEFAULT '',
    amount           numeric,
    currency         text NOT NULL DEFAULT '',
    gateway_status   text NOT NULL DEFAULT '',
    event_created_at timestamptz,
    environment      text NOT NULL,
    verified         boolean NOT NULL,
    ip               text NOT NULL DEFAULT '',
    payload          text NOT NULL,
    processed        boolean NOT NULL DEFAULT false,
    processed_at     timestamptz,
    received_at      timestamptz NOT NULL DEFAULT now()
);
-- The dedupe: two copies of one delivery, however concurrent, make one row.
CREATE UNIQUE INDEX gwa_webhooks_notification_id_key ON gwa_webhooks (notification_id);
CREATE INDEX gwa_webhooks_event_idx ON gwa_webhooks (event, id DESC);
CREATE INDEX gwa_webhooks_status_idx ON gwa_webhooks (status, id DESC);
-- Search is by prefix (see db.ListFilter): btree indexes cost a fraction of a trigram
-- index on every insert, and an operator pastes a reference, an id or an e-mail.
CREATE INDEX gwa_webhooks_reference_idx ON gwa_webhooks (reference text_pattern_ops, id DESC);
CREATE INDEX gwa_webhooks_payment_id_idx ON gwa_webhooks (payment_id text_pattern_ops);
CREATE INDEX gwa_webhooks_payer_email_idx ON gwa_webhooks (lower(payer_email) text_pattern_ops);

-- Exact counts by id bucket (id / 10000), event and status: totals without counting
-- a million rows, and pages without an OFFSET that grows with the page number (see
-- db.Store.Webhooks). A statement-level trigger adds each statement's rows, grouped,
-- to a slot chosen by the connection, so concurrent writers rarely share a row, and
-- always lock in the same order (no deadlock).
CREATE TABLE gwa_webhook_counts (
    bucket bigint NOT NULL,
    event  text NOT NULL,
    status text NOT NULL,
    slot   smallint NOT NULL,
    n      bigint NOT NULL,
    PRIMARY KEY (bucket, event, status, slot)
);

CREATE FUNCTION gwa_webhook_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO gwa_webhook_counts (bucket, event, status, slot, n)
    SELECT id / 10000, event, status, pg_backend_pid() % 4, count(*) FROM new_rows
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (bucket, event, status, slot) DO UPDATE SET n = gwa_webhook_counts.n + EXCLUDED.n;
    RETURN NULL;
END $$;

CREATE TRIGGER gwa_webhooks_count AFTER INSERT ON gwa_webhooks
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gwa_webhook_count();

-- Deliveries refused before storing (bad signature, bad JSON, too large): no body kept.
CREATE TABLE gwa_webhook_rejections (
    id          bigserial PRIMARY KEY,
    reason      text NOT NULL,
    ip          text NOT NULL DEFAULT '',
    body_bytes  integer NOT NULL DEFAULT 0,
    received_at timestamptz NOT NULL DEFAULT now()
);

-- The latest gateway outcome of each reference, by precedence (see db/payments.go).
CREATE TABLE gwa_reference_outcomes (
    reference        text PRIMARY KEY,
    outcome          text NOT NULL,
    rank             smallint NOT NULL,
    webhook_id       bigint NOT NULL REFERENCES gwa_webhooks (id),
    event_created_at timestamptz,
    updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE payment_attempts (
    id           bigserial PRIMARY KEY,
    reference    text NOT NULL DEFAULT '',
    payment_link text NOT NULL DEFAULT '',
    email        text NOT NULL DEFAULT '',
    status       text NOT NULL CHECK (status IN ('pendiente', 'pagado')),
    ip           text NOT NULL DEFAULT '',
    user_agent   text NOT NULL DEFAULT '',
    params       jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    paid_at      timestamptz
);
CREATE INDEX payment_attempts_reference_idx ON payment_attempts (reference text_pattern_ops, id DESC);
CREATE INDEX payment_attempts_status_idx ON payment_attempts (status, id DESC);
CREATE INDEX payment_attempts_email_idx ON payment_attempts (lower(email) text_pattern_ops);

CREATE TABLE api_tokens (
    id           bigserial PRIMARY KEY,
    name         text NOT NULL,
    token_hash   bytea NOT NULL UNIQUE,
    prefix       text NOT NULL,
    created_by   bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

-- crear-pago with an Idempotency-Key: the first response, replayed for repeats.
CREATE TABLE gwb_idempotency (
    key          text PRIMARY KEY,
    request_hash bytea NOT NULL,
    status       integer,
    content_type text NOT NULL DEFAULT '',
    body         bytea,
    created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE gwb_upstream_calls (
    id         bigserial PRIMARY KEY,
    method     text NOT NULL,
    path       text NOT NULL,
    status     integer NOT NULL,
    latency_ms integer NOT NULL,
    error      text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX gwb_upstream_calls_created_idx ON gwb_upstream_calls (id DESC);
