-- Moves without a column lock held through the commit (db/tasks.go): two
-- concurrent moves may now pick the same place, and this constraint is what
-- refuses the second (at commit; the move is then run again). Deferred,
-- because renumbering a column rewrites all its places in one statement and a
-- card's old place may equal a new one until the card itself moves.
UPDATE tareas AS t SET posicion = r.n * 1024
FROM (SELECT id, row_number() OVER (PARTITION BY estado ORDER BY posicion, id) AS n FROM tareas) AS r
WHERE t.id = r.id
  AND EXISTS (SELECT 1 FROM tareas d WHERE d.estado = t.estado AND d.posicion = t.posicion AND d.id <> t.id);
ALTER TABLE tareas ADD CONSTRAINT tareas_columna_key UNIQUE (estado, posicion) DEFERRABLE INITIALLY DEFERRED;
DROP INDEX tareas_columna_idx;
