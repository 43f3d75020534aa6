-- Virtual-card API proxy (CONTRACT §7). Its base URL and key live beside the
-- gateways' settings (the key encrypted), under 'tarjetas'.
ALTER TABLE gateway_settings DROP CONSTRAINT gateway_settings_gateway_check;
ALTER TABLE gateway_settings ADD CONSTRAINT gateway_settings_gateway_check CHECK (gateway IN ('gwa', 'gwb', 'tarjetas'));

-- Every proxied call: who, what, the outcome. Never the key, the query or a body.
CREATE TABLE tarjetas_llamadas (
    id         bigserial PRIMARY KEY,
    user_id    bigint REFERENCES users (id) ON DELETE SET NULL,
    user_email text NOT NULL DEFAULT '',
    method     text NOT NULL,
    path       text NOT NULL,
    status     integer NOT NULL,
    latency_ms integer NOT NULL,
    error      text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tarjetas_llamadas_created_idx ON tarjetas_llamadas (created_at);
