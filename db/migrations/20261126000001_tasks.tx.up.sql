-- Task board (CONTRACT §4).
CREATE TABLE tareas (
    id           bigserial PRIMARY KEY,
    titulo       text NOT NULL CHECK (length(titulo) BETWEEN 1 AND 200),
    descripcion  text NOT NULL DEFAULT '',
    prioridad    text NOT NULL DEFAULT 'media' CHECK (prioridad IN ('baja', 'media', 'alta', 'urgente')),
    estado       text NOT NULL DEFAULT 'por_hacer' CHECK (estado IN ('por_hacer', 'en_progreso', 'revisión', 'hecho')),
    -- Order inside a column: gaps of 1024 so a move writes one row; a column
    -- with no gap left is renumbered (see db.Store.MoveTask).
    posicion     bigint NOT NULL,
    asignado_id  bigint REFERENCES users (id) ON DELETE SET NULL,
    fecha_limite date,
    version      integer NOT NULL DEFAULT 1,
    creado_por   bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tareas_columna_idx ON tareas (estado, posicion);
CREATE INDEX tareas_asignado_idx ON tareas (asignado_id);

-- Who did what to a task, and when: created, assigned, moved, edited, commented.
CREATE TABLE tarea_actividad (
    id         bigserial PRIMARY KEY,
    tarea_id   bigint NOT NULL REFERENCES tareas (id) ON DELETE CASCADE,
    user_id    bigint REFERENCES users (id) ON DELETE SET NULL,
    accion     text NOT NULL,
    detalle    text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tarea_actividad_tarea_idx ON tarea_actividad (tarea_id, id DESC);
