-- Foundation: roles, modules, users, sessions, login throttling, notification settings.

CREATE TABLE roles (
    id         bigserial PRIMARY KEY,
    name       text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE modules (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    description text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE role_modules (
    role_id   bigint NOT NULL REFERENCES roles (id) ON DELETE CASCADE,
    module_id bigint NOT NULL REFERENCES modules (id) ON DELETE CASCADE,
    PRIMARY KEY (role_id, module_id)
);

CREATE TABLE users (
    id            bigserial PRIMARY KEY,
    email         text NOT NULL,
    name          text NOT NULL DEFAULT '',
    password_hash text NOT NULL,
    role_id       bigint NOT NULL REFERENCES roles (id),
    time_zone     text NOT NULL DEFAULT 'UTC',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
-- Logins are case-insensitive on the address.
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

-- Only a SHA-256 of the session token is stored: a copy of this table opens no session.
CREATE TABLE sessions (
    token_hash   bytea PRIMARY KEY,
    user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    ip           text NOT NULL DEFAULT '',
    user_agent   text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX sessions_user_id_idx ON sessions (user_id);
CREATE INDEX sessions_expires_at_idx ON sessions (expires_at);

-- Failed logins per key (`email:<address>` or `ip:<address>`) in a sliding window.
CREATE TABLE login_throttle (
    key          text PRIMARY KEY,
    failures     integer NOT NULL,
    window_start timestamptz NOT NULL
);

CREATE TABLE notif_evento_config (
    evento        text PRIMARY KEY,
    canal_email   boolean NOT NULL DEFAULT false,
    canal_chat    boolean NOT NULL DEFAULT false,
    canal_sistema boolean NOT NULL DEFAULT true,
    updated_at    timestamptz NOT NULL DEFAULT now()
);
