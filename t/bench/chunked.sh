#!/usr/bin/env bash
# Chunked prefill (clef_engine chunk_tokens=, docs/design/batching.md): what a
# short request waits behind a long record, in one run on this machine:
#
#     t/bench/chunked.sh [LONG_TOKENS] [CHUNK_TOKENS]
#
# One nginx with the module (t/lib/ClefNginx.pm), one engine on the CPU
# backend; for chunk_tokens=off and then CHUNK_TOKENS (default 2048, the
# directive's default; the second set by a reload): a record of about
# LONG_TOKENS tokens (default 16384) is sent, and once the engine has
# taken it (the queue is empty) and DELAY seconds (default 0.5) of its
# forward have passed, a request of about 200 tokens is sent.  Printed:
# the short request's latency alone on an idle engine, its latency behind
# the long record, the long record's own time (sent to answered), both
# ways, and the ratios off / on.  ROUNDS (default 2) rounds of each, the
# median printed.  No assertion: the figures depend on the machine.
#
# BENCH_MODEL (default build/bench/medium-qwen3: `clef mkmodel --shape
# medium`, made once), THREADS (default: every CPU).
set -euo pipefail
cd "$(dirname "$0")/../.."

LONG=${1:-16384}
CHUNK=${2:-2048}
MODEL=${BENCH_MODEL:-build/bench/medium-qwen3}
THREADS=${THREADS:-$(nproc)}

make -j"$(nproc)" all >/dev/null
if [ ! -f "$MODEL/config.json" ]; then
    mkdir -p "$(dirname "$MODEL")"
    build/clef mkmodel --shape medium --tokenizer t/fixtures/tokenizer/qwen3 \
        --seed 1 --out "$MODEL" >/dev/null
fi
MODEL=$(cd "$MODEL" && pwd)
inc=$(auto/test-nginx)
export CLEF_MODULE=$PWD/build/ngx_http_clef_module.so CLEF_BIN=$PWD/build/clef

# shellcheck disable=SC2086
exec perl -It/lib $inc - "$MODEL" "$THREADS" "$LONG" "$CHUNK" \
    "${DELAY:-0.5}" "${ROUNDS:-2}" <<'PERL'
use strict;
use warnings;
use POSIX ();
use Time::HiRes qw(time sleep);
use ClefNginx;

my ($model, $threads, $long_tokens, $chunk, $delay, $rounds) = @ARGV;
my $engine = 'zone=clef:64m max_batch_tokens=16384 timeout=600s '
           . 'watchdog=600s';

# about 9 tokens a sentence
sub body {
    my ($sentences, $q) = @_;
    return ClefNginx->json->encode({
        model => 'jev-latest',
        state => 'Ticket: '
               . ('the payout failed again and nobody answered. ' x $sentences),
        questions => { $q => { type => 'noul',
                               instructions => 'Is this urgent?' } },
    });
}
my $long = body(int($long_tokens / 9), 'urgent');
my $short = body(18, 'urgent');

# Sends a body from a child that writes "sent answered status" (seconds)
# to FILE; returns its pid.
sub send_timed {
    my ($srv, $body, $file) = @_;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        my $t0 = time;
        my $r = $srv->post_json($body, {}, 3600);
        open my $fh, '>', $file or POSIX::_exit(1);
        printf $fh "%.6f %.6f %d %s\n", $t0, time, $r->{status},
               $r->{status} == 200 ? '' : $r->{content};
        close $fh;
        POSIX::_exit(0);
    }
    return $pid;
}

sub read_times {
    my ($file) = @_;
    my ($t0, $t1, $status, $why) = split ' ', ClefNginx::slurp($file), 4;
    die "a request failed ($status): $why\n" unless ($status // 0) == 200;
    return ($t0, $t1);
}

sub median { my @s = sort { $a <=> $b } @_; return $s[$#s / 2] }

my $srv = ClefNginx->new(model => $model, model_opts => "threads=$threads",
                         engine => "$engine chunk_tokens=off");
$srv->start;
$srv->wait_ready(300);
my $tmp = $srv->prefix . '/tmp';
my %r;

for my $mode ('off', $chunk) {
    if ($mode ne 'off') {
        my @w = $srv->worker_pids;
        $srv->reload(engine => "$engine chunk_tokens=$mode");
        $srv->wait_for(sub { my @n = $srv->worker_pids;
                             @n == 1 && $n[0] != $w[0] }, 30)
            or die "the reload did not happen\n";
    }
    for my $round (1 .. $rounds) {
        # the short request alone, idle engine
        waitpid send_timed($srv, $short, "$tmp/idle"), 0;
        my ($i0, $i1) = read_times("$tmp/idle");
        push @{ $r{$mode}{idle} }, $i1 - $i0;

        my $lpid = send_timed($srv, $long, "$tmp/long");
        $srv->wait_for(sub { $srv->metric('clef_queue_depth') == 0
                             && !-e "$tmp/long" }, 60);
        sleep $delay;
        my $spid = send_timed($srv, $short, "$tmp/short");
        waitpid $_, 0 for $spid, $lpid;
        my ($s0, $s1) = read_times("$tmp/short");
        my ($l0, $l1) = read_times("$tmp/long");
        unlink "$tmp/long", "$tmp/short", "$tmp/idle";
        push @{ $r{$mode}{short} }, $s1 - $s0;
        push @{ $r{$mode}{long} }, $l1 - $l0;
        push @{ $r{$mode}{order} }, $s1 < $l1 ? 'short first' : 'long first';
    }
}
$srv->stop;

printf "model %s, %d threads, long record ~%d tokens, short ~200 tokens, "
     . "sent %.2f s into the long forward, %d rounds (medians)\n",
       $model, $threads, $long_tokens, $delay, $rounds;
printf "%-16s %12s %16s %14s  %s\n", 'chunk_tokens', 'short alone',
       'short behind', 'long record', 'answered';
for my $mode ('off', $chunk) {
    printf "%-16s %10.3f s %14.3f s %12.3f s  %s\n", $mode,
           median(@{ $r{$mode}{idle} }), median(@{ $r{$mode}{short} }),
           median(@{ $r{$mode}{long} }), join(', ', @{ $r{$mode}{order} });
}
printf "ratios off / %s: short request behind the long record %.2fx, "
     . "long record's own time %.3fx\n", $chunk,
       median(@{ $r{off}{short} }) / median(@{ $r{$chunk}{short} }),
       median(@{ $r{off}{long} }) / median(@{ $r{$chunk}{long} });
PERL
