-- Payments (CONTRACT 3): gateway settings, checkout-gateway webhooks, payment attempts,
-- subscription-gateway API tokens, idempotency and upstream call log.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

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
CREATE INDEX gwa_webhooks_reference_idx ON gwa_webhooks (reference, id DESC);
-- Text search on reference, payment id and payer e-mail (substring, case-insensitive).
CREATE INDEX gwa_webhooks_search_idx ON gwa_webhooks
    USING gin ((lower(reference || ' ' || payment_id || ' ' || payer_email)) gin_trgm_ops);

-- Exact totals per event and status without counting a million rows: a trigger adds one
-- to a row chosen by id, spread over 16 slots so that concurrent inserts rarely wait.
CREATE TABLE gwa_webhook_counts (
    event  text NOT NULL,
    status text NOT NULL,
    slot   smallint NOT NULL,
    n      bigint NOT NULL,
    PRIMARY KEY (event, status, slot)
);

CREATE FUNCTION gwa_webhook_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO gwa_webhook_counts (event, status, slot, n)
    VALUES (NEW.event, NEW.status, NEW.id % 16, 1)
    ON CONFLICT (event, status, slot) DO UPDATE SET n = gwa_webhook_counts.n + 1;
    RETURN NULL;
END $$;

CREATE TRIGGER gwa_webhooks_count AFTER INSERT ON gwa_webhooks
    FOR EACH ROW EXECUTE FUNCTION gwa_webhook_count();

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
CREATE INDEX payment_attempts_reference_idx ON payment_attempts (reference, id DESC);
CREATE INDEX payment_attempts_status_idx ON payment_attempts (status, id DESC);
CREATE INDEX payment_attempts_search_idx ON payment_attempts
    USING gin ((lower(reference || ' ' || email || ' ' || payment_link)) gin_trgm_ops);

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
