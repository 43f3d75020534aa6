-- A server's history read from the index alone (an index-only scan): its
-- rows are spread one or two to a heap page among every other server's, so
-- 7 days (20,160 rows) cost as many page reads from the table; with the
-- figures in the index they are read in order from a few index pages.
DROP INDEX servidor_metricas_history_servidor_idx;
CREATE INDEX servidor_metricas_history_servidor_idx ON servidor_metricas_history (servidor_id, created_at)
    INCLUDE (cpu, ram, swap, disk, tcp, load1);
