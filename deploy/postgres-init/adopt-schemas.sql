-- N14, for a database made before the services had roles of their own: hands each service's
-- schema, and everything in it, and its migration table to that service's role, so it can run
-- as that role from now on. Run once by a superuser, after service-roles.sql, with the same
-- psql variables api_role and payments_role, while the services are stopped:
--   psql -v api_role=commerce_api -v payments_role=commerce_payments -f adopt-schemas.sql
-- Idempotent. Tables take their column sequences and row types with them. It also takes back what
-- the first version of service-roles.sql gave (CREATE on the database and in `drizzle`) and fixes
-- each role's search_path, as service-roles.sql does now (N14).
\set ON_ERROR_STOP on

SELECT current_database() AS dbname \gset
REVOKE CREATE, TEMPORARY ON DATABASE :"dbname" FROM PUBLIC, :"api_role", :"payments_role";
GRANT CONNECT ON DATABASE :"dbname" TO :"api_role", :"payments_role";
REVOKE CREATE ON SCHEMA public FROM PUBLIC, :"api_role", :"payments_role";
REVOKE CREATE ON SCHEMA drizzle FROM PUBLIC, :"api_role", :"payments_role";
ALTER ROLE :"api_role" SET search_path = api, pg_catalog;
ALTER ROLE :"payments_role" SET search_path = payments, pg_catalog;

CREATE TEMP TABLE adopt (schema name, role name);
INSERT INTO adopt VALUES ('api', :'api_role'), ('payments', :'payments_role');

SELECT format('ALTER SCHEMA %I OWNER TO %I', n.nspname, a.role)
FROM pg_namespace n JOIN adopt a ON a.schema = n.nspname
\gexec

SELECT format('ALTER TABLE %I.%I OWNER TO %I', n.nspname, c.relname, a.role)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN adopt a ON a.schema = n.nspname
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
\gexec

-- Sequences no column owns (those a column owns moved with their table).
SELECT format('ALTER SEQUENCE %I.%I OWNER TO %I', n.nspname, c.relname, a.role)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN adopt a ON a.schema = n.nspname
WHERE c.relkind = 'S' AND NOT EXISTS (
  SELECT FROM pg_depend d WHERE d.objid = c.oid AND d.classid = 'pg_class'::regclass
    AND d.deptype IN ('a', 'i'))
\gexec

SELECT format('ALTER ROUTINE %s OWNER TO %I', p.oid::regprocedure, a.role)
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace JOIN adopt a ON a.schema = n.nspname
\gexec

SELECT format('ALTER TYPE %I.%I OWNER TO %I', n.nspname, t.typname, a.role)
FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace JOIN adopt a ON a.schema = n.nspname
WHERE t.typtype IN ('e', 'd', 'r', 'm') OR (t.typtype = 'c' AND EXISTS (
  SELECT FROM pg_class c WHERE c.oid = t.typrelid AND c.relkind = 'c'))
\gexec

-- The migration bookkeeping (drizzle.api_migrations, drizzle.payments_migrations).
SELECT format('ALTER TABLE drizzle.%I OWNER TO %I', c.relname, a.role)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'drizzle'
  JOIN adopt a ON c.relname = a.schema || '_migrations'
WHERE c.relkind = 'r'
\gexec
