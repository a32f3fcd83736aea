# Back-pressure and abandoned requests, made deterministic by stopping the
# engine (SIGSTOP) while records pile up:
#   - queue full: 429 with Retry-After and retry-after-ms; the queued ones
#     are answered once the engine runs again, in one batch;
#   - a client that disconnects: its record is cancelled (counter), and
#     nothing stays behind in the zone once the engine skipped it;
#   - a deadline that passes: 504 JSON, the record cancelled.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::INET;
use POSIX ();
use ClefNginx;

my $srv = ClefNginx->new(model => ClefNginx->model_dir(1), workers => 1,
                         engine => 'zone=clef:8m max_queue=2 timeout=2s');
$srv->start_ready;

my $body = '{"model":"jev-latest","state":"Help! My payouts have been '
         . 'failing for 3 days.","questions":{"urgent":{"type":"noul",'
         . '"instructions":"Does this convey urgency?"}}}';
my $engine = $srv->metric('clef_engine_pid');
ok $engine > 0, 'the engine runs';

# a request in the background; its result lands in a file
sub background {
    my ($tag) = @_;
    my $pid = fork // die;
    if ($pid == 0) {
        my $r = $srv->post_json($body, {}, 30);
        open my $fh, '>', $srv->prefix . "/tmp/bg-$tag";
        print $fh "$r->{status}\n$r->{content}";
        close $fh;
        POSIX::_exit(0);
    }
    return $pid;
}

sub bg_result {
    my ($tag) = @_;
    my $t = ClefNginx::slurp($srv->prefix . "/tmp/bg-$tag");
    my ($status, $content) = split /\n/, $t, 2;
    return ($status // '', $content // '');
}

sub zone_empty {
    my $m = $srv->metrics;
    return ($m->{clef_slots_in_use} // -1) == 0
        && ($m->{clef_zone_data_bytes_used} // -1) == 0;
}

# ---- queue full ---------------------------------------------------------

my $records0 = $srv->metric('clef_batch_records_sum');
kill 'STOP', $engine;
my @bg = map { background($_) } 1, 2;
ok $srv->wait_for(sub { $srv->metric('clef_queue_depth') == 2 }, 10),
    'two records wait in the queue';

my $r = $srv->post_json($body);
is $r->{status}, 429, 'the third gets 429';
is_deeply $r->{json}, { detail => { error_type => 'rate_limit_error',
    message => 'the queue is full; retry after 1000 ms' } },
    '429 body';
is $r->{headers}{'retry-after'}, '1', 'Retry-After in seconds';
is $r->{headers}{'retry-after-ms'}, '1000', 'retry-after-ms';
is $srv->metric('clef_queue_rejected_total'), 1, 'the refusal is counted';

kill 'CONT', $engine;
waitpid $_, 0 for @bg;
my ($s1, $c1) = bg_result(1);
my ($s2, $c2) = bg_result(2);
is "$s1 $s2", '200 200', 'both queued requests are answered after the stop';
is $c1, $c2, 'with the same answer';
# one batch or two: an idle executor starts with what is prepared first
is $srv->metric('clef_batch_records_sum') - $records0, 2,
    'the two records ran, once each';
ok $srv->wait_for(\&zone_empty, 5), 'the zone is empty again';

# ---- client disconnect --------------------------------------------------

kill 'STOP', $engine;
my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                 PeerPort => $srv->port, Proto => 'tcp')
    or die "connect: $!";
print $sock "POST /v1/systemone HTTP/1.1\r\nHost: x\r\n"
          . "Content-Type: application/json\r\n"
          . "Content-Length: " . length($body) . "\r\n\r\n$body";
ok $srv->wait_for(sub { $srv->metric('clef_queue_depth') == 1 }, 10),
    'the record is queued';
close $sock;
ok $srv->wait_for(sub { $srv->metric('clef_records_cancelled_total') == 1 }, 10),
    'the client went away: the record is cancelled';
kill 'CONT', $engine;
ok $srv->wait_for(\&zone_empty, 5),
    'the engine skipped it and freed its slot and data';
my $batches = $srv->metric('clef_batches_total');
$r = $srv->post_json($body);
is $r->{status}, 200, 'the next request is answered';
is $srv->metric('clef_batches_total'), $batches + 1,
    'and the cancelled record never ran';
like $srv->log_text, qr/client went away, record cancelled/,
    'the cancellation is logged';

# ---- deadline --------------------------------------------------------------

kill 'STOP', $engine;
$r = $srv->post_json($body);
is $r->{status}, 504, 'no answer within timeout=2s: 504';
is_deeply $r->{json}, { detail => { error_type => 'timeout_error',
    message => 'the engine did not start this request within 2000 ms '
             . '(queue depth 1, engine ready); retry later' } }, '504 body';
is $srv->metric('clef_records_cancelled_total'), 2, 'the record is cancelled';
kill 'CONT', $engine;
ok $srv->wait_for(\&zone_empty, 5), 'and freed once the engine runs';

is $srv->metric('clef_responses_total{status="429"}'), 1, '429 counted';
is $srv->metric('clef_responses_total{status="504"}'), 1, '504 counted';
is $srv->metric('clef_responses_total{status="499"}'), 1,
    'the disconnect counted as 499';

$srv->stop;
is_deeply [$srv->bad_log_lines], [], 'no [alert], [crit] or [emerg] in error.log';

done_testing;
