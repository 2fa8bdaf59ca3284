#!/bin/sh
# Debian's PostgreSQL doing what the official image's entry point does: a cluster made on first
# start in /var/lib/postgresql/data with POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB,
# password logins from the network, the server in the foreground.
set -eu
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
DATA=/var/lib/postgresql/data
mkdir -p "$DATA" /var/run/postgresql
chown postgres "$DATA" /var/run/postgresql
chmod 700 "$DATA"
if [ ! -s "$DATA/PG_VERSION" ]; then
    printf '%s\n' "$POSTGRES_PASSWORD" >/tmp/pwfile
    chown postgres /tmp/pwfile
    runuser -u postgres -- "$BIN/initdb" -D "$DATA" -U "$POSTGRES_USER" --pwfile=/tmp/pwfile \
        --encoding=UTF8 --locale=C.UTF-8 --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm /tmp/pwfile
    echo "host all all all scram-sha-256" >>"$DATA/pg_hba.conf"
    runuser -u postgres -- "$BIN/pg_ctl" -D "$DATA" -w -o "-c listen_addresses=''" start >/dev/null
    runuser -u postgres -- psql -q -U "$POSTGRES_USER" -d postgres \
        -c "CREATE DATABASE \"$POSTGRES_DB\""
    runuser -u postgres -- "$BIN/pg_ctl" -D "$DATA" -w stop >/dev/null
fi
exec runuser -u postgres -- "$BIN/postgres" -D "$DATA" -c listen_addresses='*'
