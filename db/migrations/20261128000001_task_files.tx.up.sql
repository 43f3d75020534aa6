-- Files attached to a task (CONTRACT §4). The file itself lives under
-- UPLOAD_DIR/tareas/<tarea_id>/<archivo>, a name the server chose.
CREATE TABLE tarea_adjuntos (
    id           bigserial PRIMARY KEY,
    tarea_id     bigint NOT NULL REFERENCES tareas (id) ON DELETE CASCADE,
    user_id      bigint REFERENCES users (id) ON DELETE SET NULL,
    nombre       text NOT NULL,
    archivo      text NOT NULL,
    bytes        bigint NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tarea_adjuntos_tarea_idx ON tarea_adjuntos (tarea_id, id);
