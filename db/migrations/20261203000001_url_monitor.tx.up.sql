-- URL monitor (CONTRACT §5, §8).
CREATE TABLE url_monitores (
    id                bigserial PRIMARY KEY,
    nombre            text NOT NULL CHECK (length(nombre) BETWEEN 1 AND 100),
    url               text NOT NULL CHECK (length(url) BETWEEN 1 AND 2000),
    timeout_s         integer NOT NULL DEFAULT 10 CHECK (timeout_s BETWEEN 1 AND 30),
    activo            boolean NOT NULL DEFAULT true,
    -- Down after this many failed checks in a row (one blip does not flap); up after one success.
    fallos_para_caida integer NOT NULL DEFAULT 2 CHECK (fallos_para_caida BETWEEN 1 AND 10),
    estado            text NOT NULL DEFAULT 'pendiente' CHECK (estado IN ('pendiente', 'up', 'down')),
    fallos_seguidos   integer NOT NULL DEFAULT 0,
    ultimo_check      timestamptz,
    ultima_latencia_ms integer,
    ultimo_status     integer,
    ultimo_error      text NOT NULL DEFAULT '',
    created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX url_monitores_estado_idx ON url_monitores (estado, id);
CREATE INDEX url_monitores_activo_idx ON url_monitores (id) WHERE activo;

-- Every check (the contract's UrlMonitorLog), in daily partitions dropped whole
-- after seven days, like the metrics history: at 10,000 monitors a day is 14 M rows.
CREATE TABLE url_monitor_log (
    monitor_id  bigint NOT NULL REFERENCES url_monitores (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    metodo      text NOT NULL,
    status      integer,
    latencia_ms integer NOT NULL,
    ok          boolean NOT NULL,
    error       text NOT NULL DEFAULT ''
) PARTITION BY RANGE (created_at);
CREATE INDEX url_monitor_log_monitor_idx ON url_monitor_log (monitor_id, created_at DESC);

-- Checks per monitor and hour: uptime over 24 h and 7 d and the latency
-- sparkline read at most 168 rows a monitor, never the log.
CREATE TABLE url_monitor_horas (
    monitor_id   bigint NOT NULL REFERENCES url_monitores (id) ON DELETE CASCADE,
    hora         timestamptz NOT NULL,
    checks       integer NOT NULL,
    ok           integer NOT NULL,
    latencia_sum bigint NOT NULL,
    PRIMARY KEY (monitor_id, hora)
);
CREATE INDEX url_monitor_horas_hora_idx ON url_monitor_horas (hora);

-- The partition of one UTC day of a daily-partitioned table, created when missing.
CREATE FUNCTION particion_diaria(tabla text, dia date) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
        tabla || '_' || to_char(dia, 'YYYYMMDD'), tabla,
        (dia::timestamp AT TIME ZONE 'UTC'), ((dia + 1)::timestamp AT TIME ZONE 'UTC'));
END $$;
SELECT particion_diaria('url_monitor_log', (now() AT TIME ZONE 'UTC')::date + d) FROM generate_series(-1, 3) AS d;
