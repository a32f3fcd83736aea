#!/bin/sh
# Fails when a kernel of the CUDA backend spills registers to local memory.
#
#   t/cuda/check-spills.sh build/cuda/ptxas.log
#
# The log is nvcc -Xptxas -v output of every cuda/*.cu (see the Makefile's
# CUDA section).  Every function ptxas compiled is on the hot path of a
# forward, so any spill store or load fails the check.  A stack frame alone
# (cosf's slow range reduction keeps its table there) is not a spill.
# Prints one line per function: registers, stack, spill stores/loads.

log=${1:-build/cuda/ptxas.log}
if [ ! -s "$log" ]; then
    echo "check-spills: $log is missing or empty" >&2
    exit 1
fi
demangle=cat
if command -v c++filt >/dev/null 2>&1; then
    demangle=c++filt
fi

out=$(awk '
/Function properties for/ { fn = $NF; next }
/bytes spill stores/ {
    stack[fn] = $1; st[fn] = $5; ld[fn] = $9; order[++n] = fn; next
}
/Compiling entry function/ { entry = $7; gsub(/\047/, "", entry); next }
/Used [0-9]+ registers/ {
    for (i = 1; i <= NF; i++) if ($(i) == "Used") regs[entry] = $(i + 1)
}
END {
    bad = 0
    for (i = 1; i <= n; i++) {
        f = order[i]
        printf "%-4s regs  %5s stack  %5s spill-st  %5s spill-ld  %s\n",
            (f in regs) ? regs[f] : "-", stack[f], st[f], ld[f], f
        if (st[f] + 0 > 0 || ld[f] + 0 > 0) bad++
    }
    if (n == 0) { print "check-spills: no function in the log" > "/dev/stderr"; exit 1 }
    if (bad) { printf "check-spills: %d function(s) spill\n", bad > "/dev/stderr"; exit 1 }
    printf "check-spills: %d functions, no spills\n", n
}' "$log")
rc=$?
printf '%s\n' "$out" | $demangle
exit $rc
