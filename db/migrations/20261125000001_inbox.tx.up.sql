-- The in-system channel of notifications (CONTRACT §6): each recipient's inbox.
CREATE TABLE notificaciones (
    id         bigserial PRIMARY KEY,
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    evento     text NOT NULL,
    titulo     text NOT NULL,
    texto      text NOT NULL DEFAULT '',
    enlace     text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    read_at    timestamptz
);
-- The inbox, unread first then newest; the layout's unread count.
CREATE INDEX notificaciones_inbox_idx ON notificaciones (user_id, (read_at IS NOT NULL), id DESC);
CREATE INDEX notificaciones_unread_idx ON notificaciones (user_id) WHERE read_at IS NULL;
