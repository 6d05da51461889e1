#!/bin/sh
# N14: run by the postgres image on its first start (docker-entrypoint-initdb.d): the api's and
# the payments service's roles, each with its own password from the container's environment.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v api_role=commerce_api -v api_password="$POSTGRES_API_PASSWORD" \
  -v payments_role=commerce_payments -v payments_password="$POSTGRES_PAYMENTS_PASSWORD" \
  -f /etc/commerce/service-roles.sql
