-- Comments on a task (CONTRACT §4).
CREATE TABLE tarea_comentarios (
    id         bigserial PRIMARY KEY,
    tarea_id   bigint NOT NULL REFERENCES tareas (id) ON DELETE CASCADE,
    user_id    bigint REFERENCES users (id) ON DELETE SET NULL,
    texto      text NOT NULL CHECK (length(texto) BETWEEN 1 AND 5000),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tarea_comentarios_tarea_idx ON tarea_comentarios (tarea_id, id);
