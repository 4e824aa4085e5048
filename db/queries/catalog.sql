-- Statements of the schema's description (db/schema.py): what the catalog holds of the schema
-- `public`, each in an order of names, so that one schema is always described in the same words.

-- name: catalog_search_path
-- Names of the schema's own objects are written unqualified by pg_get_*def.
SET LOCAL search_path = public;

-- name: catalog_tables
-- A partitioned table is told with its partition key and how many partitions it has; the
-- partitions themselves (made alike by its migration) are not listed one by one.
SELECT c.relname AS name, coalesce(array_to_string(c.reloptions, ', '), '') AS options,
       pg_get_partkeydef(c.oid) AS partitioned_by,
       (SELECT count(*) FROM pg_inherits i WHERE i.inhparent = c.oid) AS partitions
FROM pg_class c
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
ORDER BY c.relname;

-- name: catalog_columns
-- Each table's columns in their order; `expression` is the default, or the generation
-- expression of a generated column.
SELECT c.relname AS table_name, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
       a.attnotnull AS not_null, a.attgenerated AS generated, a.attidentity AS identity,
       pg_get_expr(d.adbin, d.adrelid) AS expression
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
  AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY c.relname, a.attnum;

-- name: catalog_constraints
-- NOT NULL is told with the columns (servers that keep it as a constraint too list it there).
SELECT c.relname AS table_name, k.conname AS name, pg_get_constraintdef(k.oid) AS definition
FROM pg_constraint k
JOIN pg_class c ON c.oid = k.conrelid
WHERE c.relnamespace = 'public'::regnamespace AND k.contype <> 'n'
ORDER BY c.relname, k.conname, definition;

-- name: catalog_indexes
-- Not an index of an access method an extension brings (pgvector's hnsw): made only on a server
-- that offers the extension (0008_passages.sql), so it is not part of the schema every server has.
SELECT t.relname AS table_name, i.relname AS name, pg_get_indexdef(i.oid) AS definition
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_am m ON m.oid = i.relam
WHERE t.relnamespace = 'public'::regnamespace
  AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_am'::regclass AND d.objid = m.oid AND d.deptype = 'e')
ORDER BY t.relname, i.relname;

-- name: catalog_triggers
-- The triggers the schema declares (those that enforce foreign keys are the server's own).
SELECT c.relname AS table_name, t.tgname AS name, pg_get_triggerdef(t.oid) AS definition
FROM pg_trigger t
JOIN pg_class c ON c.oid = t.tgrelid
WHERE c.relnamespace = 'public'::regnamespace AND NOT t.tgisinternal
ORDER BY c.relname, t.tgname;

-- name: catalog_views
SELECT c.relname AS name, c.relkind = 'm' AS materialized, pg_get_viewdef(c.oid, true) AS definition
FROM pg_class c
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('v', 'm')
ORDER BY c.relname;

-- name: catalog_sequences
-- Each sequence with the column that owns it, if one does (a serial column's).
SELECT c.relname AS name, format_type(s.seqtypid, NULL) AS type, s.seqstart AS start,
       s.seqincrement AS increment, s.seqmin AS min, s.seqmax AS max, s.seqcache AS cache,
       s.seqcycle AS cycle,
       (SELECT t.relname || '.' || a.attname
        FROM pg_depend d
        JOIN pg_class t ON t.oid = d.refobjid
        JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
        WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')) AS owned_by
FROM pg_sequence s
JOIN pg_class c ON c.oid = s.seqrelid
WHERE c.relnamespace = 'public'::regnamespace
ORDER BY c.relname;

-- name: catalog_functions
-- The schema's own: not those an extension brings (pgvector's, where the server offers it).
SELECT p.proname AS name, pg_get_function_identity_arguments(p.oid) AS arguments,
       pg_get_functiondef(p.oid) AS definition
FROM pg_proc p
WHERE p.pronamespace = 'public'::regnamespace AND p.prokind IN ('f', 'p')
  AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
ORDER BY p.proname, arguments;

-- name: catalog_types
-- Types of the schema's own that are not a table's row type or an array: an enum's labels, a
-- domain's base type and its constraints.
SELECT t.typname AS name,
       CASE t.typtype WHEN 'e' THEN 'enum' WHEN 'd' THEN 'domain' WHEN 'r' THEN 'range'
                      WHEN 'm' THEN 'multirange' WHEN 'c' THEN 'composite' ELSE 'base' END AS kind,
       CASE t.typtype
           WHEN 'e' THEN (SELECT string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder)
                          FROM pg_enum e WHERE e.enumtypid = t.oid)
           WHEN 'd' THEN concat_ws(' ', format_type(t.typbasetype, t.typtypmod),
                                   CASE WHEN t.typnotnull THEN 'NOT NULL' END,
                                   (SELECT string_agg(pg_get_constraintdef(k.oid), ' ' ORDER BY k.conname)
                                    FROM pg_constraint k WHERE k.contypid = t.oid))
           ELSE ''
       END AS definition
FROM pg_type t
LEFT JOIN pg_class c ON c.oid = t.typrelid
WHERE t.typnamespace = 'public'::regnamespace AND t.typelem = 0 AND (c.oid IS NULL OR c.relkind = 'c')
  AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_type'::regclass AND d.objid = t.oid AND d.deptype = 'e')
ORDER BY t.typname;

-- name: catalog_extensions
-- pgvector is created where the server offers it (0008_passages.sql), so it is not listed.
SELECT e.extname AS name FROM pg_extension e WHERE e.extname NOT IN ('plpgsql', 'vector') ORDER BY e.extname;

-- name: create_scratch_database
CREATE DATABASE {database};

-- name: drop_scratch_database
DROP DATABASE IF EXISTS {database} WITH (FORCE);
