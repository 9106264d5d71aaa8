#!/bin/sh
# Runs once, when the PostgreSQL volume is first initialised: Roost's own role is not a
# superuser (Roost refuses to run as one, since superusers bypass row-level security).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
    -v password="$ROOST_DB_PASSWORD" <<'SQL'
CREATE ROLE roost LOGIN PASSWORD :'password';
CREATE DATABASE roost OWNER roost;
SQL
