#!/usr/bin/env bash
# Several judge hosts on one machine, made of network namespaces joined by a bridge: the
# production layout of deploy/README.md (API, PostgreSQL and Redis on one host, workers on
# others, nothing shared but the network) as a recipe to read, and what tests/server/test_hosts.py
# runs. Needs root, iproute2, util-linux (unshare), PostgreSQL's server binaries, redis-server.
#
#   deploy/hosts.sh up               # bridge + host "api" (10.77.0.1); this machine is 10.77.0.254
#   deploy/hosts.sh db               # PostgreSQL and Redis on api, listening on 10.77.0.1 only
#   deploy/hosts.sh api              # kjudge serve --no-worker on api, http://10.77.0.1:8000
#   deploy/hosts.sh worker w1 11     # host w1 at 10.77.0.11: own host name, data dir, caches
#   deploy/hosts.sh cut w1           # pull w1's cable; `mend w1` puts it back
#   deploy/hosts.sh stop w1          # SIGTERM to w1's processes (a warm stop)
#   deploy/hosts.sh down             # every process of these hosts stopped, the hosts removed
#
# Each host's processes run under its own host name (a UTS namespace: worker names and claims
# read w1:PID:cpu), log to $KJ_HOSTS_DIR/NAME.log and keep their files in $KJ_HOSTS_DIR/NAME.
# Judge settings not set here (KJUDGE_PROBLEMS, KJUDGE_QUEUE_PREFIX, ...) pass through from the
# caller's environment.
set -euo pipefail

PREFIX=${KJ_HOSTS_PREFIX:-kj}        # namespaces are PREFIX-NAME, links PREFIX-NAME and PREFIXbr0
DIR=${KJ_HOSTS_DIR:-/tmp/kjudge-hosts}
NET=${KJ_HOSTS_NET:-10.77.0}         # a /24
KJUDGE=${KJUDGE:-kjudge}             # the judge's command (e.g. /opt/kjudge/.venv/bin/kjudge)
BRIDGE=${PREFIX}br0
API_IP=$NET.1
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)

export KJUDGE_DATABASE_URL=postgresql+psycopg://postgres@$API_IP:5432/kjudge
export KJUDGE_BROKER_URL=redis://$API_IP:6379/0

host() {  # host NAME IP: a namespace with one link to the bridge
    local ns=$PREFIX-$1
    ip netns add "$ns"
    ip link add "$PREFIX-$1" type veth peer name eth0 netns "$ns"
    ip link set "$PREFIX-$1" master "$BRIDGE" up
    ip -n "$ns" addr add "$2/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    mkdir -p "$DIR/$1"
}

on() {  # on NAME COMMAND...: in the background, on that host, under its host name
    local name=$1
    shift
    ip netns exec "$PREFIX-$name" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$name" "$@" \
        </dev/null >>"$DIR/$name.log" 2>&1 &
}

wait_until() {  # wait_until SECONDS WHAT COMMAND...
    local deadline=$((SECONDS + $1)) what=$2
    shift 2
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || { echo "hosts.sh: $what did not come up" >&2; exit 1; }
        sleep 0.3
    done
}

case ${1:-} in
up)
    mkdir -p "$DIR" && chmod 755 "$DIR"  # PostgreSQL's user must reach its data folder
    ip link add "$BRIDGE" type bridge
    ip addr add "$NET.254/24" dev "$BRIDGE"  # this machine, as the organizer's
    ip link set "$BRIDGE" up
    host api "$API_IP"
    ;;
db)
    install -d -o postgres -m 700 "$DIR/api/pg"
    runuser -u postgres -- "$PG_BIN/initdb" -D "$DIR/api/pg" -A trust -U postgres >/dev/null
    # this private network only, without passwords (a real deployment: scram-sha-256)
    echo "host all all $NET.0/24 trust" >>"$DIR/api/pg/pg_hba.conf"
    on api runuser -u postgres -- "$PG_BIN/postgres" -D "$DIR/api/pg" -p 5432 \
        -c listen_addresses="$API_IP" -c unix_socket_directories="$DIR/api/pg"
    on api redis-server --bind "$API_IP" --port 6379 --protected-mode no --save "" --appendonly no
    wait_until 60 PostgreSQL "$PG_BIN/pg_isready" -q -h "$API_IP" -p 5432
    wait_until 30 Redis redis-cli -h "$API_IP" ping
    runuser -u postgres -- psql -q -h "$API_IP" -U postgres -c "CREATE DATABASE kjudge"
    ;;
api)
    on api env KJUDGE_DATA_DIR="$DIR/api/data" \
        $KJUDGE serve --no-worker --host "$API_IP" --port 8000 --quiet
    wait_until 120 "the API" python3 -c \
        "import urllib.request; urllib.request.urlopen('http://$API_IP:8000/api/health')"
    ;;
worker)  # worker NAME LAST-OCTET
    host "$2" "$NET.$3"
    on "$2" env KJUDGE_DATA_DIR="$DIR/$2/data" KJUDGE_CACHE_DIR="$DIR/$2/cache" \
        KJUDGE_WORK_DIR="$DIR/$2/work" $KJUDGE worker --device cpu
    ;;
cut) ip link set "$PREFIX-$2" down ;;
mend) ip link set "$PREFIX-$2" up ;;
stop) ip netns pids "$PREFIX-$2" | xargs -r kill -TERM ;;
down)
    for ns in $(ip netns list | awk '{print $1}' | grep "^$PREFIX-" || true); do
        ip netns pids "$ns" | xargs -r kill -TERM 2>/dev/null || true
    done
    for _ in $(seq 50); do
        left=$(for ns in $(ip netns list | awk '{print $1}' | grep "^$PREFIX-" || true); do
            ip netns pids "$ns"; done)
        [ -z "$left" ] && break
        sleep 0.2
    done
    for ns in $(ip netns list | awk '{print $1}' | grep "^$PREFIX-" || true); do
        ip netns pids "$ns" | xargs -r kill -KILL 2>/dev/null || true
        ip netns del "$ns"
    done
    ip link del "$BRIDGE" 2>/dev/null || true
    ;;
*)
    sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
