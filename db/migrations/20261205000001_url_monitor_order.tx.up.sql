-- The list's order (by name, case-insensitive), read from an index rather than
-- sorting every monitor for each page.
CREATE INDEX url_monitores_nombre_idx ON url_monitores (lower(nombre), id);
