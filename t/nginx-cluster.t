# Scale-out on nginx itself: a front nginx balancing /v1/systemone over
# three engine nodes on loopback with the shipped conf/cluster-proxy.conf
# (least_conn, max_fails, proxy_next_upstream on errors, 429, 502-504,
# keepalive):
#   - requests spread over the nodes, every answer as `clef decide` gives;
#   - a node that answers 429 (its engine stopped, its queue of one full)
#     sheds its load to the others:
#     the clients see 200 only;
#   - killing a node (kill -9 of all its processes) under load loses no
#     request: those it had not reached go elsewhere, and so do those it
#     had (a decision is a pure function of its body);
#   - /v1/models through the front;
#   - the front's own errors (no node left) are JSON.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use POSIX ();
use ClefNginx;

my $root = "$FindBin::Bin/..";
my $proxy_conf = Cwd::abs_path("$root/conf/cluster-proxy.conf");

# three nodes; the third is overloaded: its engine is stopped and its queue
# holds one record, so it answers 429 (and 504 for the one it queued)
my @nodes;
for my $i (1 .. 3) {
    my $n = ClefNginx->new(model => ClefNginx->model_dir(1), workers => 1,
        engine => $i == 3 ? 'zone=clef:32m max_queue=1 timeout=3s'
                          : 'zone=clef:32m timeout=20s',
        http_config => "    add_header X-Node node$i always;\n");
    push @nodes, $n;
}
$_->start_ready for @nodes;
my $stopped = $nodes[2]->metric('clef_engine_pid');
kill 'STOP', $stopped;

my $upstream = join '', map {
    "        server 127.0.0.1:" . $_->port . " max_fails=1 fail_timeout=30s;\n"
} @nodes;
my $front = ClefNginx->new(workers => 2,
    http_config => "    clef_json_errors on;\n"
        . "    upstream clef_nodes {\n        least_conn;\n$upstream"
        . "        keepalive 16;\n    }\n",
    server_config => <<"LOC");
        location = /v1/systemone { include $proxy_conf; }
        location = /v1/models    { include $proxy_conf; }
LOC
$front->start;

my $body = ClefNginx->json->encode({ model => 'jev-latest',
    state => 'Help! My payouts have been failing for 3 days.',
    questions => { urgent => { type => 'noul',
                               instructions => 'Does this convey urgency?' } } });
my $want = ClefNginx->json->encode($nodes[0]->decide($body));

# One round of requests from parallel clients through the front; returns
# { status => count }, { node => count }, and the bodies that were wrong.
sub round {
    my ($clients, $each) = @_;
    my $dir = $front->prefix . '/tmp/round-' . int(rand 1e9);
    mkdir $dir;
    my @kids;
    for my $c (1 .. $clients) {
        my $pid = fork // die;
        if ($pid == 0) {
            my $ua = HTTP::Tiny->new(timeout => 60, keep_alive => 1);
            open my $out, '>', "$dir/$c" or POSIX::_exit(1);
            for (1 .. $each) {
                my $r = $ua->request('POST', $front->base . '/v1/systemone',
                    { content => $body,
                      headers => { 'Content-Type' => 'application/json' } });
                my $node = $r->{headers}{'x-node'} // '-';
                $node = $node->[-1] if ref $node;
                (my $c = $r->{content} // '') =~ s/\n/ /g;
                print $out "$r->{status}\t$node\t$c\n";
            }
            close $out;                 # _exit flushes nothing
            POSIX::_exit(0);
        }
        push @kids, $pid;
    }
    waitpid $_, 0 for @kids;
    my (%status, %node, @wrong);
    for my $c (1 .. $clients) {
        open my $in, '<', "$dir/$c" or next;
        while (<$in>) {
            chomp;
            my ($st, $node, $content) = split /\t/, $_, 3;
            $status{$st}++;
            $node{$node}++;
            push @wrong, $content if $st == 200
                && ClefNginx->json->encode(ClefNginx->json->decode($content))
                   ne $want;
        }
    }
    return (\%status, \%node, \@wrong);
}

# ---- spread, and 429 shedding ------------------------------------------------

my ($status, $node, $wrong) = round(8, 10);
is_deeply $status, { 200 => 80 }, '80 requests through the front: all 200'
    or diag explain $status;
is scalar(@$wrong), 0, 'every answer as clef decide gives it';
ok(($node->{node1} // 0) > 0 && ($node->{node2} // 0) > 0,
   'they spread over the nodes (' . join(', ', map { "$_ $node->{$_}" }
                                         sort keys %$node) . ')');
ok !$node->{node3}, 'the overloaded node answered none of them';
cmp_ok $nodes[2]->metric('clef_responses_total{status="429"}'), '>', 0,
    'it refused some with 429 ('
    . $nodes[2]->metric('clef_responses_total{status="429"}')
    . '): its load went to the others';
kill 'CONT', $stopped;

# ---- a node killed under load ----------------------------------------------------

{
    my $victim = $nodes[0];
    my @pids = ($victim->pid, $victim->worker_pids,
                $victim->metric('clef_keeper_pid'),
                $victim->metric('clef_engine_pid'));
    my $killer = fork // die;
    if ($killer == 0) {
        select undef, undef, undef, 0.3;
        kill 'KILL', @pids;
        POSIX::_exit(0);
    }
    ($status, $node, $wrong) = round(8, 10);
    waitpid $killer, 0;
    waitpid $victim->pid, 0;
    delete $victim->{pid};
    is_deeply $status, { 200 => 80 }, 'node 1 killed under load: all 80 '
        . 'requests answered 200, none lost' or diag explain $status;
    is scalar(@$wrong), 0, 'with the right answers';
    ok $front->wait_for(sub { !grep { ClefNginx->alive($_) } @pids }, 10),
        'node 1 is gone';
    ($status, $node) = round(4, 5);
    is_deeply $status, { 200 => 20 }, 'afterwards the other nodes serve alone';
    ok !$node->{node1}, 'none of it on the dead node';
}

# ---- /v1/models through the front ----------------------------------------------

my $r = $front->request('GET', '/v1/models');
is $r->{status}, 200, '/v1/models through the front';
is $r->{json}{models}[0]{name}, 'clef-tiny', 'naming the nodes\' model';

# ---- no node left: the front's own JSON error ------------------------------------

$_->stop for @nodes[1, 2];
$r = $front->post_json($body);
is $r->{status}, 502, 'no node left: 502';
is $r->{content}, '{"detail":{"error_type":"internal_error","message":"the '
    . 'server answered 502"}}', 'as JSON';

$front->stop;
is_deeply [$front->bad_log_lines], [], 'front: no [alert], [crit] or [emerg]';

done_testing;
