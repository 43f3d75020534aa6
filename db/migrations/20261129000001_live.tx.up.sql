-- Live updates (server/live.go): every web process LISTENs on pasarela_live
-- and tells its open pages what changed. The triggers send the notices, so no
-- writer can forget one; NOTIFY is transactional, so a rolled-back change
-- sends nothing, and identical notices of one transaction arrive once.

-- 'tablero': something on the task board changed (a card, its comment or file counts).
CREATE FUNCTION pasarela_live_tablero() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('pasarela_live', 'tablero');
    RETURN NULL;
END $$;
CREATE TRIGGER tareas_live AFTER INSERT OR UPDATE OR DELETE ON tareas
    FOR EACH STATEMENT EXECUTE FUNCTION pasarela_live_tablero();
CREATE TRIGGER tarea_comentarios_live AFTER INSERT OR DELETE ON tarea_comentarios
    FOR EACH STATEMENT EXECUTE FUNCTION pasarela_live_tablero();
CREATE TRIGGER tarea_adjuntos_live AFTER INSERT OR DELETE ON tarea_adjuntos
    FOR EACH STATEMENT EXECUTE FUNCTION pasarela_live_tablero();

-- 'bandeja:1,2': the inboxes of these users changed (their unread badge).
-- A notice holds at most 8000 bytes: past that, 'bandeja:*' tells every page.
CREATE FUNCTION pasarela_live_bandeja() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ids text;
BEGIN
    SELECT string_agg(DISTINCT user_id::text, ',') INTO ids FROM cambiadas;
    IF ids IS NULL THEN
        RETURN NULL;
    END IF;
    IF length(ids) > 7000 THEN
        ids := '*';
    END IF;
    PERFORM pg_notify('pasarela_live', 'bandeja:' || ids);
    RETURN NULL;
END $$;
CREATE TRIGGER notificaciones_live_insert AFTER INSERT ON notificaciones
    REFERENCING NEW TABLE AS cambiadas FOR EACH STATEMENT EXECUTE FUNCTION pasarela_live_bandeja();
CREATE TRIGGER notificaciones_live_update AFTER UPDATE ON notificaciones
    REFERENCING NEW TABLE AS cambiadas FOR EACH STATEMENT EXECUTE FUNCTION pasarela_live_bandeja();
