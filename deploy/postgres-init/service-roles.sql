-- N14: one PostgreSQL role per service, not a superuser, that can use only its own schema.
-- Run once by a superuser in the shop's database, with psql variables api_role, api_password,
-- payments_role and payments_password (deploy/postgres-init/10-service-roles.sh does it on the
-- postgres container's first start; the N14 test runs this same file).
--
-- Each service creates its own schema (`api`, `payments`) in its first migration and so owns it;
-- the other role is granted nothing there, so it can neither read nor change it. The migration
-- bookkeeping lives in the schema `drizzle`, where each service keeps one table of its own
-- (`drizzle.api_migrations`, `drizzle.payments_migrations`), again owned by that service alone.
\set ON_ERROR_STOP on

SELECT current_database() AS dbname \gset

CREATE ROLE :"api_role" LOGIN PASSWORD :'api_password'
  NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
CREATE ROLE :"payments_role" LOGIN PASSWORD :'payments_password'
  NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;

-- CREATE on the database: each service's first migration creates its own schema.
GRANT CONNECT, CREATE ON DATABASE :"dbname" TO :"api_role", :"payments_role";
-- Nothing in `public` for anyone (PostgreSQL 15+ already refuses CREATE there to PUBLIC).
REVOKE CREATE ON SCHEMA public FROM PUBLIC;

CREATE SCHEMA IF NOT EXISTS drizzle;
GRANT USAGE, CREATE ON SCHEMA drizzle TO :"api_role", :"payments_role";
