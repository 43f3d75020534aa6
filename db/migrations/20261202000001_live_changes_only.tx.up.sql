-- Live updates only for statements that changed rows. A statement-level
-- trigger fires even when its statement touched nothing (an edit refused as
-- stale, marking read what was read): every open board reloaded for nothing.
-- Transition tables say whether rows changed; PostgreSQL allows them on
-- triggers of one event only, hence one trigger per event.
DROP TRIGGER tareas_live ON tareas;
DROP TRIGGER tarea_comentarios_live ON tarea_comentarios;
DROP TRIGGER tarea_adjuntos_live ON tarea_adjuntos;
DROP TRIGGER notificaciones_live_update ON notificaciones;

CREATE OR REPLACE FUNCTION pasarela_live_tablero() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM cambiadas) THEN
        PERFORM pg_notify('pasarela_live', 'tablero');
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER tareas_live_insert AFTER INSERT ON tareas
    REFERENCING NEW TABLE AS cambiadas FOR EACH STATEMENT EXECUTE FUNCTION pasarela_live_tablero();
CREATE TRIGGER tareas_live_update AFTER UPDATE ON tareas
    REFERENCING NEW TABLE AS cambiadas FOR EACH STATEMENT EXECUTE FUNCTION pasarela_live_tablero();
CREATE TRIGGER tareas_live_delete AFTER DELETE ON tareas
    REFERENCING OLD TABLE AS cambiadas FOR EACH STATEMENT EXECUTE FUNCTION pasarela_live_tablero();
CREATE TRIGGER tarea_comentarios_live_insert AFTER INSERT ON tarea_comentarios
    REFERENCING NEW TABLE AS cambiadas FOR EACH STATEMENT EXECUTE FUNCTION pasarela_live_tablero();
CREATE TRIGGER tarea_comentarios_live_delete AFTER DELETE ON tarea_comentarios
    REFERENCING OLD TABLE AS cambiadas FOR EACH STATEMENT EXECUTE FUNCTION pasarela_live_tablero();
CREATE TRIGGER tarea_adjuntos_live_insert AFTER INSERT ON tarea_adjuntos
    REFERENCING NEW TABLE AS cambiadas FOR EACH STATEMENT EXECUTE FUNCTION pasarela_live_tablero();
CREATE TRIGGER tarea_adjuntos_live_delete AFTER DELETE ON tarea_adjuntos
    REFERENCING OLD TABLE AS cambiadas FOR EACH STATEMENT EXECUTE FUNCTION pasarela_live_tablero();

-- Marking read: only the rows whose read_at changed (MarkRead's COALESCE
-- rewrites a read row with the same value).
CREATE FUNCTION pasarela_live_bandeja_leida() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ids text;
BEGIN
    SELECT string_agg(DISTINCT n.user_id::text, ',') INTO ids
    FROM cambiadas n JOIN anteriores o ON o.id = n.id
    WHERE n.read_at IS DISTINCT FROM o.read_at;
    IF ids IS NULL THEN
        RETURN NULL;
    END IF;
    IF length(ids) > 7000 THEN
        ids := '*';
    END IF;
    PERFORM pg_notify('pasarela_live', 'bandeja:' || ids);
    RETURN NULL;
END $$;
CREATE TRIGGER notificaciones_live_update AFTER UPDATE ON notificaciones
    REFERENCING NEW TABLE AS cambiadas OLD TABLE AS anteriores
    FOR EACH STATEMENT EXECUTE FUNCTION pasarela_live_bandeja_leida();
