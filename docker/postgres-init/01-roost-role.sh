#!/bin/sh
# Runs once, when the PostgreSQL volume is first initialised. Two roles, neither a superuser
# (superusers bypass row-level security): `roost` owns the database and its tables and runs the
# migrations; `roost_app` is what the server connects as, owns nothing and gets row access
# only, granted by `roost` when it migrates (docs/SECURITY.md).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
    -v password="$ROOST_DB_PASSWORD" -v app_password="$ROOST_APP_DB_PASSWORD" <<'SQL'
CREATE ROLE roost LOGIN PASSWORD :'password';
CREATE ROLE roost_app LOGIN PASSWORD :'app_password' NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
CREATE DATABASE roost OWNER roost;
SQL
