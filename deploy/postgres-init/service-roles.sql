-- N14: one PostgreSQL role per service, not a superuser, that can use only its own schema.
-- Run once by a superuser in the shop's database, with psql variables api_role, api_password,
-- payments_role and payments_password (deploy/postgres-init/10-service-roles.sh does it on the
-- postgres container's first start; the N14 test runs this same file).
--
-- Neither role can create a schema or anything outside its own schema: a role that may create a
-- schema can make one named like the other role (in the default search_path "$user", public) and
-- put in it a function with an exact signature, e.g. jsonb_build_object(text,text,text,text), that
-- PostgreSQL prefers to the variadic built-in in the other role's statements. So this script makes
-- both schemas itself, each owned by its role; gives no CREATE on the database, `public` or
-- `drizzle`; and fixes each role's search_path to its own schema, then pg_catalog.
--
-- The migration bookkeeping lives in the schema `drizzle`, one table per service
-- (`drizzle.api_migrations`, `drizzle.payments_migrations`), made here and owned by that service.
\set ON_ERROR_STOP on

SELECT current_database() AS dbname \gset

CREATE ROLE :"api_role" LOGIN PASSWORD :'api_password'
  NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
CREATE ROLE :"payments_role" LOGIN PASSWORD :'payments_password'
  NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;

-- CONNECT only: no CREATE (no new schemas), no TEMPORARY either.
REVOKE ALL ON DATABASE :"dbname" FROM PUBLIC;
GRANT CONNECT ON DATABASE :"dbname" TO :"api_role", :"payments_role";
-- Nothing in `public` for anyone (PostgreSQL 15+ already refuses CREATE there to PUBLIC).
REVOKE CREATE ON SCHEMA public FROM PUBLIC;

-- Each service's own schema, owned by its role (its first migration finds it made).
CREATE SCHEMA IF NOT EXISTS api AUTHORIZATION :"api_role";
CREATE SCHEMA IF NOT EXISTS payments AUTHORIZATION :"payments_role";

-- The bookkeeping: drizzle's own table layout, one table per service, no CREATE in the schema.
CREATE SCHEMA IF NOT EXISTS drizzle;
REVOKE ALL ON SCHEMA drizzle FROM PUBLIC;
GRANT USAGE ON SCHEMA drizzle TO :"api_role", :"payments_role";
CREATE TABLE IF NOT EXISTS drizzle.api_migrations (
  id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint);
CREATE TABLE IF NOT EXISTS drizzle.payments_migrations (
  id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint);
ALTER TABLE drizzle.api_migrations OWNER TO :"api_role";
ALTER TABLE drizzle.payments_migrations OWNER TO :"payments_role";

-- Names resolve in the role's own schema, then the built-ins; the services set it on connect too.
ALTER ROLE :"api_role" SET search_path = api, pg_catalog;
ALTER ROLE :"payments_role" SET search_path = payments, pg_catalog;
