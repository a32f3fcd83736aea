# Chunked prefill through nginx (clef_engine chunk_tokens=, scheduler.h),
# checked by the order of events, never by a clock:
#
#   - with chunk_tokens=256, the engine stopped, a long record (about 9,000
#     tokens: 35 parts) is queued, then a short one (under 256 tokens: it
#     runs whole); the engine continued,
#     the short request is answered before the long one (it runs between
#     two of its parts), and both answers are clef decide's (the parts give
#     the bits of the whole record);
#   - the same, the short request sent while the long record runs: the
#     long record is sent to the running engine, which is stopped as soon
#     as its first part has run; the count of its parts that ran then
#     (more than none, fewer than all) is checked, the short request sent,
#     the engine continued: the short request is answered first;
#   - reloaded with chunk_tokens=off, the first sequence answers the long
#     record first (it runs whole, alone over max_batch_tokens): so the
#     first order comes from chunking, not from the request sizes;
#   - nginx -t refuses a chunk_tokens that is not a positive multiple of
#     the alignment (64), naming it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use POSIX ();
use ClefNginx;

my $model = ClefNginx->model_dir(1);
my $engine_args = 'zone=clef:32m max_batch_tokens=1024 timeout=60s';

my $long = ClefNginx->json->encode({
    model => 'jev-latest',
    state => 'Ticket: ' . ('the payout failed again and nobody answered. '
                           x 1000),
    questions => { urgent => { type => 'noul',
                               instructions => 'Is this urgent?' } },
});
my $short = ClefNginx->json->encode({
    model => 'jev-latest',
    state => 'Ticket: ' . ('the payout failed. ' x 5),
    questions => { team => { type => 'choice', instructions => 'Which team?',
                             criteria => { billing => undef,
                                           technical => undef } } },
});

# Sends a body from a child, which writes the answer to tmp/NAME; returns
# its pid.
sub send_body {
    my ($srv, $name, $body) = @_;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        my $r = $srv->post_json($body, {}, 120);
        open my $fh, '>', $srv->prefix . "/tmp/$name" or POSIX::_exit(1);
        print $fh $r->{status}, "\n", $r->{content} // '';
        close $fh;
        POSIX::_exit(0);
    }
    return $pid;
}

# Once $depth records are queued (the engine stopped: the short one last),
# the engine continued: the names of the requests in %$name (pid => name)
# in the order their answers arrive (after those already in @$order), and
# the answers.
sub answers {
    my ($srv, $engine, $depth, $name, $order) = @_;

    $srv->wait_for(sub { $srv->metric('clef_queue_depth') == $depth }, 20)
        or diag 'the short record was not queued';
    kill 'CONT', $engine;
    while (@$order < 2) {
        my $pid = waitpid -1, 0;
        push @$order, $name->{$pid} // "pid $pid";
    }
    my %got = map {
        my ($status, $content) = split /\n/,
            ClefNginx::slurp($srv->prefix . "/tmp/$_"), 2;
        ($_ => [ $status, $content ])
    } qw(long short);
    return ($order, \%got);
}

# The engine stopped, the long record is queued, then the short one; the
# engine continues: it prepares the long record, starts its parts, and
# prepares the short one meanwhile (its tokens against the long record's
# 32 parts), which then runs between two parts.  Returns the names in the
# order their answers arrived and the answers.
sub race {
    my ($srv) = @_;
    my $engine = $srv->metric('clef_engine_pid');
    my %name;

    kill 'STOP', $engine;
    $name{ send_body($srv, 'long', $long) } = 'long';
    $srv->wait_for(sub { $srv->metric('clef_queue_depth') == 1 }, 20)
        or diag 'the long record was not queued';
    $name{ send_body($srv, 'short', $short) } = 'short';
    return answers($srv, $engine, 2, \%name, []);
}

# The long record is sent to a running engine; as soon as its first part
# has run (the batch counter moved) the engine is stopped, and the number
# of its parts that ran is read: between one and all but the last, the
# long record is running.  The short one is queued then, the engine
# continued.  Returns the order of the answers, the parts that had run
# when the short request was sent, and the answers.
sub race_running {
    my ($srv) = @_;
    my $engine = $srv->metric('clef_engine_pid');
    my $base = $srv->metric('clef_batches_total');
    my (%name, @order);

    my $lpid = send_body($srv, 'long', $long);
    $name{$lpid} = 'long';
    1 until $srv->metric('clef_batches_total') > $base
            || (waitpid($lpid, POSIX::WNOHANG()) == $lpid
                && push @order, 'long');
    kill 'STOP', $engine;
    my $ran = $srv->metric('clef_batches_total') - $base;
    $name{ send_body($srv, 'short', $short) } = 'short';
    my ($order, $got) = answers($srv, $engine, 1, \%name, \@order);
    return ($order, $ran, $got);
}

my $srv = ClefNginx->new(model => $model,
                         engine => "$engine_args chunk_tokens=256");
$srv->start_ready;

my %want = map {
    ($_->[0] => ClefNginx->json->encode($srv->decide($_->[1])))
} [ long => $long ], [ short => $short ];

# ---- chunked: the short request between the long record's parts ---------

my $batches0 = $srv->metric('clef_batches_total');
my ($order, $got) = race($srv);
is_deeply $order, [ 'short', 'long' ],
    'chunk_tokens=256: the short request sent while the long record runs '
    . 'is answered before it';
for my $n (qw(long short)) {
    is $got->{$n}[0], 200, "$n: 200";
    is(ClefNginx->json->encode(ClefNginx->json->decode($got->{$n}[1])),
       $want{$n}, "$n: the answer clef decide gives (whole records)");
}
cmp_ok $srv->metric('clef_batches_total') - $batches0, '>=', 30,
    'the long record ran in parts: '
    . ($srv->metric('clef_batches_total') - $batches0) . ' batches';

# ---- chunked: the short request sent while the long record runs --------

my $parts = int((ClefNginx->json->decode($got->{long}[1])
                 ->{usage}{input_tokens} + 255) / 256);
my $ran;
($order, $ran, $got) = race_running($srv);
ok $ran >= 1 && $ran < $parts,
    "the short request was sent while the long record ran: $ran of its "
    . "$parts parts had run";
is_deeply $order, [ 'short', 'long' ],
    'chunk_tokens=256: it is answered before the long record';
is(ClefNginx->json->encode(ClefNginx->json->decode($got->{$_}[1])),
   $want{$_}, "$_: clef decide's answer") for qw(long short);

# ---- chunk_tokens=off on reload: the long record first ------------------

my @workers = $srv->worker_pids;
$srv->reload(engine => "$engine_args chunk_tokens=off");
ok $srv->wait_for(sub {
        my @w = $srv->worker_pids;
        @w == 1 && $w[0] != $workers[0]
    }, 15), 'reloaded with chunk_tokens=off';
$batches0 = $srv->metric('clef_batches_total');
($order, $got) = race($srv);
is_deeply $order, [ 'long', 'short' ],
    'chunk_tokens=off: the long record is answered first, the short one '
    . 'waits for its whole forward';
is $got->{long}[0], 200, 'long: 200';
is $got->{short}[0], 200, 'short: 200';
is $srv->metric('clef_batches_total') - $batches0, 2,
    'two batches: the long record whole, then the short one';

$srv->stop;
is_deeply [$srv->bad_log_lines], [], 'no [alert], [crit] or [emerg] in error.log';

# ---- nginx -t ------------------------------------------------------------

for my $bad ('100', '0', '-64', 'abc', '') {
    my $t = ClefNginx->new(model => $model,
                           engine => "zone=clef:32m chunk_tokens=$bad");
    $t->write_config;
    my ($rc, $out) = $t->run_nginx('-t');
    my $why = qq{invalid parameter "chunk_tokens=$bad": a part of a record }
            . 'is a positive multiple of 64 tokens, or off';
    ok $rc != 0 && index($out, $why) >= 0,
        "nginx -t refuses chunk_tokens=$bad" or diag $out;
}
for my $good ('64', '4096', 'off') {
    my $t = ClefNginx->new(model => $model,
                           engine => "zone=clef:32m chunk_tokens=$good");
    $t->write_config;
    my ($rc, $out) = $t->run_nginx('-t');
    is $rc, 0, "nginx -t accepts chunk_tokens=$good" or diag $out;
}

done_testing;
