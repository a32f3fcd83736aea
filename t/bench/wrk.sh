#!/usr/bin/env bash
# Benchmark (not a test): wrk against POST /v1/systemone served by the tiny
# checkpoint, and against a static file of the same response size from the
# same nginx; prints requests/s and p99 latency of both, and the ratios.
#
#   t/bench/wrk.sh                      defaults: 2 workers, 2 threads,
#   DURATION=20s CONNECTIONS=32 WORKERS=4 t/bench/wrk.sh      16 connections, 10 s
#
# Needs `make` first (the module and build/clef) and wrk (auto/deps).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-16}
THREADS=${THREADS:-2}
WORKERS=${WORKERS:-2}
nginx=${NGINX:-/usr/sbin/nginx}
module=${CLEF_MODULE:-$root/build/ngx_http_clef_module.so}
clef=${CLEF_BIN:-$root/build/clef}

command -v wrk >/dev/null || { echo "wrk is not installed (auto/deps)" >&2; exit 1; }

model=$root/build/t/nginx-model-1
if [ ! -f "$model/joint_head_config.json" ]; then
    # the same checkpoint as the nginx suites' (t/lib/ClefNginx.pm)
    tok=${CLEF_TOKENIZER:-$root/t/fixtures/tokenizer/qwen3}
    mkdir -p "$root/build/t"
    "$clef" mkmodel --shape tiny --tokenizer "$tok" --seed 1 --out "$model" >/dev/null
fi

prefix=$(mktemp -d /tmp/clef-wrk-XXXXXX)
chmod 755 "$prefix"
mkdir -p "$prefix/conf" "$prefix/logs" "$prefix/html" "$prefix/tmp"
port=$(perl -MIO::Socket::INET -e 'print IO::Socket::INET->new(LocalAddr=>"127.0.0.1",LocalPort=>0,Listen=>1)->sockport')
user=
[ "$(id -u)" = 0 ] && user="user nobody nogroup;"

cat > "$prefix/conf/nginx.conf" <<CONF
load_module $module;
$user
worker_processes $WORKERS;
pid logs/nginx.pid;
error_log logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path tmp/body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    clef_model clef-tiny $model threads=1;
    clef_engine zone=clef:64m max_batch_tokens=16384 max_queue=4096 timeout=30s;
    server {
        listen 127.0.0.1:$port;
        root html;
        location = /v1/systemone { clef_systemone; }
        location = /static.json { default_type application/json; }
        location = /status { clef_status; }
    }
}
CONF

"$nginx" -p "$prefix/" -c conf/nginx.conf -g 'daemon off;' &
master=$!
cleanup() { kill -QUIT "$master" 2>/dev/null || true; wait "$master" 2>/dev/null || true; rm -rf "$prefix"; }
trap cleanup EXIT

body='{"model":"jev-latest","state":"Help! My payouts have been failing for 3 days.","questions":{"is_urgent":{"type":"noul","instructions":"Does this convey urgency?"},"team":{"type":"choice","instructions":"Which team?","criteria":{"billing":null,"technical":"Bugs, outages","sales":null}}}}'
for i in $(seq 1 100); do
    if curl -sf "http://127.0.0.1:$port/v1/systemone" -H 'Content-Type: application/json' \
            -d "$body" -o "$prefix/html/static.json" 2>/dev/null; then
        break
    fi
    sleep 0.1
done
[ -s "$prefix/html/static.json" ] || { echo "the server did not answer" >&2; cat "$prefix/logs/error.log" >&2; exit 1; }

cat > "$prefix/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = [[$body]]
LUA

workers_cpu() {   # CPU ticks (utime + stime) of the nginx workers
    local t=0 p
    for p in $(pgrep -P "$master"); do
        grep -q "worker process" "/proc/$p/cmdline" 2>/dev/null || continue
        t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
    done
    echo "$t"
}

run() {   # name url [script]
    local out cpu0 cpu1
    cpu0=$(workers_cpu)
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency ${3:+-s "$3"} "$2")
    cpu1=$(workers_cpu)
    local rps p99 non2xx
    rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
    p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
    non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
    local reqs us
    reqs=$(awk '/requests in/ {print $1}' <<<"$out")
    us=$(awk -v c=$((cpu1 - cpu0)) -v n="$reqs" -v hz="$(getconf CLK_TCK)" \
         'BEGIN { printf "%.1f", c * 1e6 / hz / n }')
    printf '%-18s %10s req/s   p99 %9s   worker CPU %6s us/req   non-2xx %s\n' \
        "$1" "$rps" "$p99" "$us" "${non2xx:-0}"
    echo "$rps $p99 $us" > "$prefix/$1.res"
}

to_ms() {   # wrk's 1.23ms / 456.78us / 1.02s -> milliseconds
    awk -v v="$1" 'BEGIN {
        if (v ~ /us$/) { sub(/us$/, "", v); print v / 1000 }
        else if (v ~ /ms$/) { sub(/ms$/, "", v); print v + 0 }
        else if (v ~ /s$/) { sub(/s$/, "", v); print v * 1000 }
        else print v }'
}

size=$(stat -c %s "$prefix/html/static.json")
echo "wrk: $THREADS threads, $CONNECTIONS connections, $DURATION each;" \
     "nginx $WORKERS workers; response $size bytes; tiny CPU model"
run static-same-size "http://127.0.0.1:$port/static.json"
run systemone "http://127.0.0.1:$port/v1/systemone" "$prefix/post.lua"

read -r s_rps s_p99 s_us < "$prefix/static-same-size.res"
read -r c_rps c_p99 c_us < "$prefix/systemone.res"
awk -v a="$c_rps" -v b="$s_rps" -v pa="$(to_ms "$c_p99")" -v pb="$(to_ms "$s_p99")" \
    -v ua="$c_us" -v ub="$s_us" 'BEGIN {
    printf "ratio systemone/static: %.4f of the requests/s, p99 %.1fx, " \
           "worker CPU per request %.1fx\n", a / b, pa / pb, ua / ub }'
curl -s "http://127.0.0.1:$port/status" | awk '
    /^clef_batches_total / { b = $2 } /^clef_batch_records_sum / { r = $2 }
    /^clef_batch_records_max / { m = $2 } /^clef_tokens_per_second / { t = $2 }
    END { if (b) printf "engine: %d batches, %.2f records per batch (max %d), %.0f tokens/s\n", b, r / b, m, t }'
