# Real traffic, not tidy requests (the server once wedged for good under an
# ordinary mix).  Four workers, one engine, the tiny model, a batch budget
# that long records overflow:
#
#   1. the exact wedge: records that do not fit one batch together, sent
#      at once, several rounds;
#   2. a realistic mix from 16 clients: tiny, medium and near-budget
#      records, slow clients, clients that vanish, hostile bodies (13 MiB
#      of letters, a 519-byte zstd bomb of 13 MiB, images, broken JSON)
#      next to normal ones.  Every normal record is answered 200 within
#      its deadline, byte for byte as the same request alone; every
#      hostile one gets its precise JSON error;
#   3. 500 connections at once, all answered;
#   4. the watchdog: a stopped engine with work waiting is killed, the
#      waiting requests get 503 with Retry-After, a new engine answers;
#   5. afterwards the server answers normally, and quits leaving no
#      process behind;
#   6. a stopped engine during nginx quit and stop: everything is gone
#      within the drain time, and the keeper does not spin meanwhile;
#   7. a record whose forward takes longer than the request timeout is
#      answered: the timeout bounds the wait for the forward to start.
# The bound stated for the small requests is their deadline (timeout=20s):
# each must be answered 200, never 504.  Latency figures are printed
# (diag), never asserted.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::INET;
use IO::Select;
use POSIX ();
use Time::HiRes qw(sleep time);
use ClefNginx;

my $json = ClefNginx->json;
my $srv = ClefNginx->new(model => ClefNginx->model_dir(1), workers => 4,
    engine => 'zone=clef:160m max_batch_tokens=16384 max_queue=2048 '
            . 'timeout=20s watchdog=4s',
    http_config => "    client_max_body_size 13m;\n"
                 . "    client_body_buffer_size 1m;\n");
$srv->start_ready;

sub body {
    my ($state, %q) = @_;
    %q = (q => { type => 'noul', instructions => 'Is it urgent?' }) unless %q;
    return $json->encode({ model => 'jev-latest', state => $state,
                           questions => \%q });
}

my %questions3 = (
    urgent => { type => 'noul', instructions => 'Does this convey urgency?' },
    team   => { type => 'choice', instructions => 'Which team?',
                criteria => { billing => undef, technical => 'Bugs',
                              sales => undef } },
    sev    => { type => 'score', instructions => 'How severe?',
                criteria => [ 'cosmetic', 'annoying', 'blocking' ] },
);
my @tiny = map { body("Ticket $_: my payout failed.") } 0 .. 19;
my @medium = map {
    body("Ticket $_: " . ('the payout failed again and support is silent. '
                          x (40 + $_)), %questions3)
} 0 .. 7;
# 8,866 digits: about 8,900 tokens each, two do not fit 16,384
my @long = map { body(("$_" x 8866)) } 1 .. 4;

# ---- 1. the exact wedge ---------------------------------------------------------

for my $round (1 .. 3) {
    my $res = $srv->parallel(2, 1, sub { $long[$_[0]] }, 60);
    is join(' ', sort map { $_->[2] } @$res), '200 200',
        "round $round: two records that do not fit one batch are both answered";
}
my $m = $srv->metrics;
is $m->{clef_queue_depth}, 0, 'nothing left queued';
is $m->{clef_slots_in_use}, 0, 'no slot held';

# ---- 2. the mix -----------------------------------------------------------------

# what each normal request answers alone, one at a time
my (%alone, @normal);
push @normal, @tiny, @medium, @long;
for my $b (@normal) {
    next if exists $alone{$b};
    my $r = $srv->post_json($b, {}, 60);
    $alone{$b} = "$r->{status} $r->{content}";
}
is scalar(grep { /^200 / } values %alone), scalar(keys %alone),
    scalar(keys %alone) . ' distinct requests answered alone';

my $letters = do {
    srand 7;
    my $block = join '', map { chr(97 + int(rand 26)) } 1 .. 65536;
    body(substr($block x 208, 0, 13 * 1024 * 1024 - 300));
};
my $bomb = ClefNginx::slurp("$FindBin::Bin/fixtures/hostile/"
                            . 'bomb-13m-of-a.json.zst');
my $image = $json->encode({ model => 'm', state => 'look',
    images => [ 'data:image/png;base64,iVBORw0KGgo=' ],
    questions => { q => { type => 'noul' } } });

# A scripted client: a list of [kind, body, headers]; kinds other than
# "normal" and "hostile" change how the request is sent.
sub run_client {
    my ($steps, $out) = @_;
    my $ua = HTTP::Tiny->new(timeout => 60, keep_alive => 1);
    for my $s (@$steps) {
        my ($kind, $b, $h) = @$s;
        my $t0 = time;
        if ($kind eq 'vanish') {
            # sends a whole request and leaves before the answer
            my $c = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                          PeerPort => $srv->port) or next;
            print $c "POST /v1/systemone HTTP/1.1\r\nHost: x\r\n"
                   . "Content-Type: application/json\r\nContent-Length: "
                   . length($b) . "\r\n\r\n$b";
            sleep 0.05;
            close $c;
            print $out "vanish\t-\t0\t\n";
            next;
        }
        if ($kind eq 'slow') {
            # a body that trickles in over a second and a half
            my $c = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                          PeerPort => $srv->port) or next;
            print $c "POST /v1/systemone HTTP/1.1\r\nHost: x\r\n"
                   . "Connection: close\r\nContent-Type: application/json\r\n"
                   . "Content-Length: " . length($b) . "\r\n\r\n";
            my $n = int(length($b) / 6) + 1;
            for (my $i = 0; $i < length $b; $i += $n) {
                print $c substr($b, $i, $n);
                $c->flush;
                sleep 0.25;
            }
            local $/;
            my $resp = <$c> // '';
            my ($status) = $resp =~ m{^HTTP/1\.1 (\d+)};
            my ($content) = $resp =~ /\r\n\r\n(.*)\z/s;
            printf $out "normal\t%d\t%.4f\t%s\n", $status // 0, time - $t0,
                   $content // '';
            next;
        }
        my $r = $ua->request('POST', $srv->base . '/v1/systemone',
            { content => $b, headers => { 'Content-Type' => 'application/json',
                                          %{ $h || {} } } });
        (my $content = $r->{content} // '') =~ s/\n/ /g;
        printf $out "%s\t%d\t%.4f\t%s\n", $kind, $r->{status}, time - $t0,
               $content;
    }
}

my @scripts;
for my $c (0 .. 15) {
    my @steps;
    for my $i (0 .. 9) {
        my $n = $c * 10 + $i;
        push @steps, [ 'normal', $tiny[$n % @tiny] ];
        push @steps, [ 'normal', $medium[$n % @medium] ] if $n % 3 == 0;
        push @steps, [ 'normal', $long[$n % @long] ] if $n % 40 == 7;
    }
    push @steps, [ 'vanish', $medium[$c % @medium] ] if $c % 4 == 1;
    push @steps, [ 'slow', $tiny[$c] ] if $c % 4 == 2;
    push @steps, [ 'letters', $letters ] if $c == 3;
    push @steps, [ 'bomb', $bomb, { 'Content-Encoding' => 'zstd' } ]
        if $c == 5;
    push @steps, [ 'image', $image ] if $c == 7;
    push @steps, [ 'broken', '{"model":"m","state":' ] if $c == 9;
    # hostile steps first half of the time, last the other half
    @steps = reverse @steps if $c % 2;
    push @scripts, \@steps;
}

my $dir = $srv->prefix . '/tmp/mix';
mkdir $dir;
my $t0 = time;
my @kids;
for my $c (0 .. $#scripts) {
    my $pid = fork // die;
    if ($pid == 0) {
        open my $out, '>', "$dir/$c" or POSIX::_exit(1);
        run_client($scripts[$c], $out);
        close $out;
        POSIX::_exit(0);
    }
    push @kids, $pid;
}
waitpid $_, 0 for @kids;
my $wall = time - $t0;

my (@lat, %by_kind, @bad, $same, $n_normal);
for my $c (0 .. $#scripts) {
    my @steps = grep { $_->[0] ne 'vanish' } @{ $scripts[$c] };
    open my $in, '<', "$dir/$c" or die;
    my @lines = grep { !/^vanish\t/ } <$in>;
    chomp @lines;
    is scalar(@lines), scalar(@steps), "client $c: every request answered";
    for my $k (0 .. $#lines) {
        my ($kind, $status, $secs, $content) = split /\t/, $lines[$k], 4;
        push @{ $by_kind{$kind} }, [ $status, $content ];
        next unless $kind eq 'normal';
        $n_normal++;
        push @lat, $secs;
        my $want = $alone{ $steps[$k][1] };
        if ("$status $content" eq $want) {
            $same++;
        } else {
            push @bad, "client $c step $k: $status " . substr($content, 0, 200);
        }
    }
}
is $same, $n_normal, "all $n_normal normal requests: 200, byte for byte "
    . 'as the same request alone' or diag join "\n", grep { defined } @bad[0 .. 4];
@lat = sort { $a <=> $b } @lat;
diag sprintf 'mix: %d normal requests from 16 clients in %.1f s; latency '
    . 'p50 %.3f s, p99 %.3f s, max %.3f s', $n_normal, $wall,
    $lat[int(@lat * 0.5)], $lat[int(@lat * 0.99)], $lat[-1];

my %hostile = (
    letters => [ 400, '{"detail":{"error_type":"max_tokens_exceeded",'
                 . '"message":"Request needs more than 106498 tokens (the '
                 . 'state alone is 13631188 bytes); the limit is 65536."}}' ],
    bomb    => [ 400, '{"detail":{"error_type":"max_tokens_exceeded",'
                 . '"message":"Request needs more than 106499 tokens (the '
                 . 'state alone is 13631288 bytes); the limit is 65536."}}' ],
    image   => [ 400, '{"detail":{"error_type":"image_invalid",'
                 . '"message":"Image 0 cannot be read: the PNG has no IHDR '
                 . 'chunk where the format puts it.","loc":["body","images",0]}}' ],
    broken  => [ 422, undef ],
);
for my $k (sort keys %hostile) {
    my ($want_status, $want_body) = @{ $hostile{$k} };
    my ($got) = @{ $by_kind{$k} || [] };
    is $got->[0], $want_status, "$k: $want_status";
    is $got->[1], $want_body, "$k: the precise JSON error" if defined $want_body;
}
like $by_kind{broken}[0][1], qr/^\{"detail":\[\{"type":"json_invalid"/,
    'broken JSON: 422 json_invalid';

$m = $srv->metrics;
cmp_ok $m->{clef_batch_records_max}, '>=', 2,
    "records shared batches (at most $m->{clef_batch_records_max} in one)";
is $m->{clef_engine_stalls_total}, 0, 'the watchdog never fired';
is $m->{'clef_replica_up{replica="0"}'}, 1, 'one replica (the CPU), up';
is $m->{'clef_replica_batches_total{replica="0"}'}, $m->{clef_batches_total},
    'it ran every batch';
ok !exists $m->{'clef_replica_up{replica="1"}'}, 'and no other';
is $m->{clef_engine_restarts_total}, 0, 'the engine never restarted';
is $m->{'clef_responses_total{status="504"}'}, 0, 'no request timed out';
ok $srv->wait_for(sub { $srv->metric('clef_slots_in_use') == 0 }, 10),
    'every slot is free again (the vanished clients\' records too)';

# ---- 3. 500 connections at once ----------------------------------------------------

{
    my @socks;
    my $sel = IO::Select->new;
    my $req_body = $tiny[0];
    my $req = "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            . "Content-Type: application/json\r\nContent-Length: "
            . length($req_body) . "\r\n\r\n$req_body";
    for (1 .. 500) {
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                      PeerPort => $srv->port) or last;
        push @socks, $s;
    }
    is scalar(@socks), 500, '500 connections open';
    print $_ $req for @socks;
    my %buf;
    $sel->add(@socks);
    my $deadline = time + 120;
    while ($sel->count && time < $deadline) {
        for my $s ($sel->can_read(1)) {
            my $n = sysread $s, my $chunk, 65536;
            if (!$n) {
                $sel->remove($s);
                next;
            }
            $buf{$s} .= $chunk;
        }
    }
    my %status;
    for my $s (@socks) {
        my ($st) = ($buf{$s} // '') =~ m{^HTTP/1\.1 (\d+)};
        $status{$st // 'none'}++;
        close $s;
    }
    is_deeply \%status, { 200 => 500 }, '500 connections: 500 answers, all 200'
        or diag explain \%status;
    my ($body500) = ($buf{ $socks[-1] } // '') =~ /\r\n\r\n(.*)\z/s;
    is "200 $body500", $alone{$req_body}, 'and the same answer as alone';
}

# ---- 4. the watchdog ------------------------------------------------------------------

{
    my $engine = $srv->metric('clef_engine_pid');
    kill 'STOP', $engine;
    my $t = time;
    my $res = $srv->parallel(3, 1, sub { $tiny[$_[0]] }, 60);
    my $waited = time - $t;
    is join(' ', map { $_->[2] } @$res), '503 503 503',
        'a stopped engine with work waiting: the watchdog kills it, the '
        . 'waiting requests get 503';
    like $res->[0][3], qr/"error_type":"engine_unavailable"/,
        'engine_unavailable';
    cmp_ok $waited, '<', 20, sprintf 'before their deadline (%.1f s, '
        . 'watchdog 4 s)', $waited;
    like $srv->log_text, qr/clef keeper: engine $engine made no progress for \d+ ms with 3 records waiting/,
        'the keeper says why';
    is $srv->metric('clef_engine_stalls_total'), 1, 'one stall counted';
    ok !ClefNginx->alive($engine), 'the stopped engine is gone';
    $srv->wait_ready(60);
    my $r = $srv->post_json($tiny[1]);
    is "$r->{status} $r->{content}", $alone{ $tiny[1] },
        'a new engine answers, the same answer';
    my $r503 = $srv->parallel(1, 1, sub { $tiny[2] }, 60);
    is $r503->[0][2], 200, 'and keeps answering';
}

# ---- 5. normal service afterwards -------------------------------------------------------

{
    my $r = $srv->post_json($medium[0]);
    is "$r->{status} $r->{content}", $alone{ $medium[0] },
        'after everything, a normal request: the same answer as at first';
    my @pids = ($srv->pid, $srv->worker_pids,
                $srv->metric('clef_keeper_pid'), $srv->metric('clef_engine_pid'));
    $srv->stop;
    ok $srv->wait_for(sub { !grep { ClefNginx->alive($_) } @pids }, 30),
        'nginx quit: master, workers, keeper and engine are gone';
    is_deeply [$srv->bad_log_lines], [], 'no [alert], [crit] or [emerg]';
}

# ---- 6. a stopped engine during quit and stop --------------------------------------------

# proc CPU seconds (user + system) of a pid
sub cpu_seconds {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/stat" or return -1;
    my @f = split / /, (<$fh> =~ s/^.*\) //r);
    return ($f[11] + $f[12]) / POSIX::sysconf(POSIX::_SC_CLK_TCK());
}

for my $how ('QUIT', 'TERM') {
    my $s = ClefNginx->new(model => ClefNginx->model_dir(1), workers => 1,
                           engine => 'zone=clef:16m timeout=2s');
    $s->start_ready;
    my $engine = $s->metric('clef_engine_pid');
    my $keeper = $s->metric('clef_keeper_pid');
    my @pids = ($s->pid, $s->worker_pids, $keeper, $engine);
    kill 'STOP', $engine;
    my $t = time;
    my $cpu0 = cpu_seconds($keeper);
    kill $how, $s->pid;
    sleep 3;
    my $cpu = cpu_seconds($keeper) - $cpu0;
    cmp_ok $cpu, '<', 0.3, sprintf '%s with a stopped engine: the keeper '
        . 'waits without spinning (%.2f s CPU in 3 s)', $how, $cpu;
    ok $s->wait_for(sub {
            waitpid($s->pid, POSIX::WNOHANG());       # the master is ours
            !grep { ClefNginx->alive($_) } @pids }, 30),
        "$how: master, workers, keeper and the stopped engine are gone";
    my $took = time - $t;
    cmp_ok $took, '<', 2 + 10 + 5, sprintf "%s: within the drain time "
        . '(timeout 2 s + 10 s; took %.1f s)', $how, $took;
    like $s->log_text, qr/engine $engine did not drain in 12000 ms, killing it/,
        "$how: the keeper says it killed the engine";
    delete $s->{pid};
}

# ---- 7. a forward longer than the timeout -------------------------------------------------

{
    my $s = ClefNginx->new(model => ClefNginx->model_dir(1), workers => 1,
                           engine => 'zone=clef:16m timeout=1s');
    $s->start_ready;
    # about 40,000 tokens: a forward of several seconds on the tiny model
    my $r = $s->post_json(body('7' x 40000), {}, 120);
    is $r->{status}, 200, 'a 40,000-token record with timeout=1s: 200 '
        . '(the deadline passed while its forward ran)';
    like $s->log_text, qr/deadline passed while the record's forward runs/,
        'and the worker says it waited for the running forward';
    my $ms = $s->metric('clef_engine_seconds_total');
    cmp_ok $ms, '>', 1, sprintf 'the forward did outlast the timeout '
        . '(%.1f s in the engine)', $ms;
    $s->stop;
}

done_testing;
