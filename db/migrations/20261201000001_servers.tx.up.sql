-- Servers and their metrics history (CONTRACT §5, §8).
CREATE TABLE servidores (
    id             bigserial PRIMARY KEY,
    nombre         text NOT NULL CHECK (length(nombre) BETWEEN 1 AND 100),
    host           text NOT NULL CHECK (length(host) BETWEEN 1 AND 255),
    -- The agent's token: only its SHA-256 is kept; the prefix tells tokens apart.
    token_hash     bytea NOT NULL UNIQUE,
    token_prefix   text NOT NULL,
    -- The agent's heartbeat interval; offline after three without one.
    intervalo_s    integer NOT NULL DEFAULT 30 CHECK (intervalo_s BETWEEN 5 AND 3600),
    estado         text NOT NULL DEFAULT 'pendiente' CHECK (estado IN ('pendiente', 'online', 'offline')),
    ultimo_latido  timestamptz,
    cpu            real,
    ram            real,
    swap           real,
    disk           real,
    tcp            integer,
    load1          real,
    -- Optional alert: disk above this percentage (servidor_umbral once per crossing).
    umbral_disco   real CHECK (umbral_disco > 0 AND umbral_disco <= 100),
    umbral_superado boolean NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX servidores_online_idx ON servidores (ultimo_latido) WHERE estado = 'online';

-- One row per heartbeat, in daily partitions: the purge drops whole days
-- (no dead rows, no vacuum, no lock on today's inserts), and a server's
-- range query reads its own rows through (servidor_id, created_at).
CREATE TABLE servidor_metricas_history (
    servidor_id bigint NOT NULL REFERENCES servidores (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    cpu         real NOT NULL,
    ram         real NOT NULL,
    swap        real NOT NULL,
    disk        real NOT NULL,
    tcp         integer NOT NULL,
    load1       real NOT NULL
) PARTITION BY RANGE (created_at);
CREATE INDEX servidor_metricas_history_servidor_idx ON servidor_metricas_history (servidor_id, created_at);

-- The partition of one UTC day, created when missing (db.Store.EnsureMetricPartitions).
CREATE FUNCTION servidor_metricas_particion(dia date) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    nombre text := 'servidor_metricas_history_' || to_char(dia, 'YYYYMMDD');
BEGIN
    EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF servidor_metricas_history FOR VALUES FROM (%L) TO (%L)',
        nombre, (dia::timestamp AT TIME ZONE 'UTC'), ((dia + 1)::timestamp AT TIME ZONE 'UTC'));
END $$;
SELECT servidor_metricas_particion((now() AT TIME ZONE 'UTC')::date + d) FROM generate_series(-1, 3) AS d;
