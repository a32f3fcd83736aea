#!/bin/sh
# t/cuda/device-check.sh without a device: it must say so at once, exit 2
# and still leave env.txt (the tools and libraries it found) and
# summary.txt.  FORCE_NO_DEVICE takes that exit even where a GPU exists,
# so this test never starts the real run.
out=$(mktemp -d)
t0=$(date +%s)
OUT=$out FORCE_NO_DEVICE=1 bash t/cuda/device-check.sh > "$out/stdout" 2>&1
rc=$?
t=$(( $(date +%s) - t0 ))
n=0

check() {
    n=$((n + 1))
    if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}

[ "$rc" -eq 2 ]; check $? "exits 2 (got $rc)"
[ "$t" -le 60 ]; check $? "within a minute (${t} s)"
grep -q 'no device' "$out/stdout"; check $? "says 'no device'"
grep -q 'NO DEVICE' "$out/summary.txt"; check $? "summary.txt says NO DEVICE"
grep -q 'pkg-config' "$out/env.txt" && grep -q 'dpkg-deb' "$out/env.txt" \
    && grep -q 'cuBLASLt' "$out/env.txt" && grep -q 'nvidia-smi' "$out/env.txt"
check $? "env.txt records the tools, cuBLASLt/NCCL and nvidia-smi"
[ "$(ls "$out" | wc -l)" -eq 3 ]; check $? "nothing else written ($(ls "$out" | tr '\n' ' '))"
echo "1..$n"
rm -rf "$out"
