# Many clients, many workers, one engine: 200 requests from 16 parallel
# clients across 4 workers are all answered exactly as `clef decide`
# answers them alone, and records from different workers share batches
# (the status counters show it; a stopped engine makes the first batch
# certain to hold several).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use POSIX ();
use ClefNginx;

my $srv = ClefNginx->new(model => ClefNginx->model_dir(1), workers => 4,
                         engine => 'zone=clef:32m max_batch_tokens=8192 '
                                 . 'timeout=60s');
$srv->start_ready;

# ten different requests, cycled; each answered once by the reference
my @bodies;
for my $i (0 .. 9) {
    my %q = (
        urgent => { type => 'noul', instructions => "Is ticket $i urgent?" },
        team   => { type => 'choice', instructions => 'Which team?',
                    criteria => { billing => undef, technical => 'Bugs',
                                  sales => undef } },
    );
    $q{sev} = { type => 'score', instructions => 'How severe?',
                criteria => [ 'cosmetic', 'annoying', 'blocking' ] } if $i % 2;
    push @bodies, ClefNginx->json->encode({
        model => 'jev-latest',
        state => "Ticket $i: " . ('the payout failed again. ' x (1 + $i * 3)),
        questions => \%q,
    });
}
my @want = map { ClefNginx->json->encode($srv->decide($_)) } @bodies;
is scalar(@want), 10, 'ten reference answers';

# ---- several records in one batch, for certain ---------------------------

my $engine = $srv->metric('clef_engine_pid');
kill 'STOP', $engine;
my @kids;
for my $c (0 .. 7) {
    my $pid = fork // die;
    if ($pid == 0) {
        my $r = $srv->post_json($bodies[$c], {}, 60);
        open my $fh, '>', $srv->prefix . "/tmp/batch-$c";
        print $fh ClefNginx->json->encode($r->{json} // {});
        close $fh;
        POSIX::_exit(0);
    }
    push @kids, $pid;
}
ok $srv->wait_for(sub { $srv->metric('clef_queue_depth') == 8 }, 20),
    'eight records from four workers wait';
kill 'CONT', $engine;
waitpid $_, 0 for @kids;
my @got = map { ClefNginx::slurp($srv->prefix . "/tmp/batch-$_") } 0 .. 7;
is_deeply \@got, [ @want[0 .. 7] ], 'all eight answered as clef decide answers';
cmp_ok $srv->metric('clef_batch_records_max'), '>=', 2,
    'at least one batch held several records ('
    . $srv->metric('clef_batch_records_max') . ')';

# ---- 200 requests, 16 clients ------------------------------------------------

my $batches0 = $srv->metric('clef_batches_total');
my $res = $srv->parallel(16, 13, sub {
    my ($c, $i) = @_;
    return undef if $c >= 8 && $i == 12;     # 8 x 13 + 8 x 12 = 200
    return $bodies[($c * 13 + $i) % 10];
}, 60);
is scalar(@$res), 200, '16 clients sent 200 requests';
my @wrong = grep {
    my ($c, $i, $status, $content) = @$_;
    my $n = ($c * 13 + $i) % 10;
    $status != 200
        || ClefNginx->json->encode(ClefNginx->json->decode($content)) ne $want[$n]
} @$res;
is scalar(@wrong), 0, 'every one answered exactly as clef decide answers it'
    or diag explain [ @wrong[0 .. ($#wrong < 2 ? $#wrong : 2)] ];

my $m = $srv->metrics;
my $batches = $m->{clef_batches_total} - $batches0;
ok $batches > 0 && $batches <= 200, "the engine ran $batches batches for them";
# the histogram is cumulative: le="1" counts the single-record batches
my $several = $m->{'clef_batch_records_bucket{le="+Inf"}'}
            - $m->{'clef_batch_records_bucket{le="1"}'};
ok $several >= 1, "$several batches held more than one record";
is $m->{'clef_responses_total{status="200"}'}, 208, '208 answers counted';
is $m->{clef_slots_in_use}, 0, 'no slot left in use';
is $m->{clef_zone_data_bytes_used}, 0, 'no data left in the zone';
cmp_ok $m->{clef_tokens_per_second}, '>', 0, 'tokens per second reported';
is $m->{'clef_request_duration_seconds_count'}, 208, 'latency histogram count';

$srv->stop;
is_deeply [$srv->bad_log_lines], [], 'no [alert], [crit] or [emerg] in error.log';

done_testing;
