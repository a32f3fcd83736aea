# The engine process across nginx's life (docs/architecture.md §1):
#   - nginx -s reload under load, model unchanged: no failed request, the
#     same engine pid, the weights loaded once;
#   - a reload with another model: a new engine after the old one drained,
#     the new model answers;
#   - kill -9 of a worker under load: the other workers keep answering;
#   - kill -9 of the engine: waiting requests get 503 at once (not their
#     504 deadline), the keeper starts a new engine, which answers;
#   - nginx stop and quit return once the keeper and the engine have
#     drained and exited, the engine's last line in the log.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use POSIX ();
use Time::HiRes qw(sleep time);
use ClefNginx;

my $model1 = ClefNginx->model_dir(1);
my $model2 = ClefNginx->model_dir(2);

my $body = '{"model":"jev-latest","state":{"ticket":{"subject":"Refund?",'
         . '"body":"Charged twice"}},"questions":{"refund":{"type":"noul",'
         . '"instructions":"Is `ticket` a refund request?"},"topic":{"type":'
         . '"choice","instructions":"Topic?","criteria":{"refund":null,'
         . '"shipping":null,"account":null,"other":null}}}}';

# Clients that post until a stop file appears; results land in files.
sub load_start {
    my ($srv, $clients) = @_;
    my $dir = $srv->prefix . '/tmp/load';
    mkdir $dir;
    unlink glob "$dir/*";
    my @pids;
    for my $c (1 .. $clients) {
        my $pid = fork // die;
        if ($pid == 0) {
            my $ua = HTTP::Tiny->new(timeout => 30, keep_alive => 0);
            open my $out, '>', "$dir/$c" or POSIX::_exit(1);
            $out->autoflush(1);
            while (!-e "$dir/stop") {
                my $r = $ua->request('POST', $srv->base . '/v1/systemone',
                    { content => $body,
                      headers => { 'Content-Type' => 'application/json' } });
                my $model = $r->{content} =~ /"model":"([^"]+)"/ ? $1 : '-';
                print $out "$r->{status} $model\n";
            }
            POSIX::_exit(0);
        }
        push @pids, $pid;
    }
    return { dir => $dir, pids => \@pids };
}

sub load_stop {
    my ($load) = @_;
    open my $fh, '>', "$load->{dir}/stop";
    close $fh;
    waitpid $_, 0 for @{ $load->{pids} };
    my %count;
    for my $f (glob "$load->{dir}/[0-9]*") {
        open my $in, '<', $f or next;
        $count{$_}++ for map { chomp; $_ } <$in>;
    }
    return \%count;
}

sub total { my $c = shift; my $n = 0; $n += $_ for values %$c; $n }

# ---- reload under load, same model ------------------------------------

my $srv = ClefNginx->new(model => $model1, workers => 2);
$srv->start_ready;
my $m = $srv->metrics;
my $engine = $m->{clef_engine_pid};
my $keeper = $m->{clef_keeper_pid};
ok $engine > 0 && $keeper > 0, 'keeper and engine run';
is $m->{clef_weight_loads_total}, 1, 'the weights were loaded once';
like(ClefNginx->cmdline($keeper), qr/clef keeper/, 'the keeper is named');
like(ClefNginx->cmdline($engine), qr/clef engine/, 'the engine is named');

my @workers = $srv->worker_pids;
my $load = load_start($srv, 4);
sleep 0.5;
$srv->reload;
ok $srv->wait_for(sub {
        my @w = $srv->worker_pids;
        @w == 2 && !grep { my $o = $_; grep { $_ == $o } @workers } @w
    }, 15), 'the reload replaced both workers';
sleep 0.3;
$srv->reload;
sleep 0.7;
my $count = load_stop($load);
ok total($count) > 20, 'requests flowed during two reloads (' . total($count) . ')';
is_deeply [ sort keys %$count ], [ '200 clef-tiny' ],
    'every request during the reloads was answered by the model'
    or diag explain $count;
$m = $srv->metrics;
is $m->{clef_engine_pid}, $engine, 'the engine pid did not change';
is $m->{clef_keeper_pid}, $keeper, 'nor the keeper pid';
is $m->{clef_weight_loads_total}, 1, 'the weights were not loaded again';
is $m->{clef_engine_starts_total}, 1, 'the engine started once';
like $srv->log_text, qr/clef: model "clef-tiny" unchanged, engine $engine/,
    'the reload says the engine stays';

# ---- reload with another model ----------------------------------------------

my $old = $srv->post_json($body);
$load = load_start($srv, 2);
sleep 0.3;
$srv->reload(model => $model2, model_name => 'clef-tiny-2');
ok $srv->wait_for(sub {
        my $r = $srv->post_json($body);
        $r->{status} == 200 && $r->{json}{model} eq 'clef-tiny-2'
    }, 20), 'the new model answers after the reload';
$count = load_stop($load);
my @odd = grep { !/^(200 clef-tiny|200 clef-tiny-2|503 -)$/ } keys %$count;
is_deeply \@odd, [], 'during the switch: answers of either model, or a '
    . 'retryable 503' or diag explain $count;
$m = $srv->metrics;
isnt $m->{clef_engine_pid}, $engine, 'a new engine serves it';
ok !ClefNginx->alive($engine), 'the old engine is gone';
ok !ClefNginx->alive($keeper), 'and its keeper';
is $m->{clef_weight_loads_total}, 2, 'the new weights were loaded once';
is $m->{clef_engine_generation}, 2, 'generation 2';
my $new = $srv->post_json($body);
isnt $new->{content}, $old->{content} =~ s/clef-tiny/clef-tiny-2/r,
    'with the other checkpoint\'s probabilities';
like $srv->log_text, qr/waiting for engine \d+ of the previous configuration/,
    'the new engine waited for the old one to drain';
$engine = $m->{clef_engine_pid};
$keeper = $m->{clef_keeper_pid};

# ---- kill -9 of a worker under load -------------------------------------------

@workers = $srv->worker_pids;
$load = load_start($srv, 4);
sleep 0.5;
kill 'KILL', $workers[0];
ok $srv->wait_for(sub {
        my @w = $srv->worker_pids;
        @w == 2 && !grep { $_ == $workers[0] } @w
    }, 10), 'nginx replaced the killed worker';
sleep 0.5;
$count = load_stop($load);
my $failed = total($count) - ($count->{'200 clef-tiny-2'} // 0);
ok $count->{'200 clef-tiny-2'} > 20, 'the other workers kept answering ('
    . ($count->{'200 clef-tiny-2'} // 0) . ')';
ok $failed <= 4, "at most the killed worker's requests in flight failed ($failed)";
my @after = map { $srv->post_json($body)->{status} } 1 .. 10;
is_deeply \@after, [ (200) x 10 ], 'every request after the kill is answered';
is $srv->metric('clef_engine_pid'), $engine, 'the engine did not notice';

# ---- kill -9 of the engine -------------------------------------------------------

my $epoch = $srv->metric('clef_engine_epoch');
my $failed0 = $srv->metric('clef_records_failed_total');
kill 'STOP', $engine;
my @bg;
for my $i (1 .. 2) {
    my $pid = fork // die;
    if ($pid == 0) {
        my $r = $srv->post_json($body, {}, 30);
        open my $fh, '>', $srv->prefix . "/tmp/crash-$i";
        print $fh "$r->{status}\n$r->{content}";
        close $fh;
        POSIX::_exit(0);
    }
    push @bg, $pid;
}
ok $srv->wait_for(sub { $srv->metric('clef_queue_depth') == 2 }, 10),
    'two requests wait for the stopped engine';
kill 'KILL', $engine;
waitpid $_, 0 for @bg;
for my $i (1 .. 2) {
    my ($status, $content) = split /\n/,
        ClefNginx::slurp($srv->prefix . "/tmp/crash-$i"), 2;
    is $status, 503, "waiting request $i: 503, long before its deadline";
    is $content, '{"detail":{"error_type":"engine_unavailable","message":'
               . '"the inference engine restarted; retry"}}', '503 body';
}
ok $srv->wait_for(sub { $srv->metric('clef_engine_state{state="ready"}') == 1
                        && $srv->metric('clef_engine_pid') != $engine }, 20),
    'the keeper started a new engine';
my $r = $srv->post_json($body);
is $r->{status}, 200, 'which answers';
is $r->{content}, $new->{content}, 'the same answer as before the crash';
$m = $srv->metrics;
is $m->{clef_engine_restarts_total}, 1, 'one restart counted';
is $m->{clef_engine_epoch}, $epoch + 1, 'the ownership epoch moved on';
is $m->{clef_keeper_pid}, $keeper, 'the same keeper';
is $m->{clef_records_failed_total} - $failed0, 2,
    'the two waiting records failed';
like $srv->log_text, qr/clef keeper: engine $engine killed by signal 9; restarting/,
    'the crash is logged';
$engine = $m->{clef_engine_pid};

# ---- kill -9 of the keeper: the engine goes with it; a reload heals ----------

kill 'KILL', $keeper;
ok $srv->wait_for(sub { !ClefNginx->alive($engine) }, 10),
    'the engine dies with its keeper (PR_SET_PDEATHSIG)';
$r = $srv->post_json($body);
is $r->{status}, 503, 'requests get 503 at once';
is $r->{json}{detail}{message}, 'the inference engine and its keeper are '
    . 'gone; nginx -s reload starts them again', 'saying what to do';
my @old_workers = $srv->worker_pids;
$srv->reload;
ok $srv->wait_for(sub { $srv->metric('clef_engine_state{state="ready"}') == 1
                        && ClefNginx->alive($srv->metric('clef_engine_pid')) },
                  20), 'after a reload a new keeper and engine serve';
# a request that reaches an old worker still closing answers 503 "the
# model configuration was replaced; retry": wait until they are gone
ok $srv->wait_for(sub { !grep { ClefNginx->alive($_) } @old_workers }, 20),
    'the old workers are gone';
is $srv->post_json($body)->{status}, 200, 'and answer';
$m = $srv->metrics;
isnt $m->{clef_keeper_pid}, $keeper, 'a new keeper';
$engine = $m->{clef_engine_pid};
$keeper = $m->{clef_keeper_pid};

# ---- requests that arrive while a new model loads wait for it --------------

# the old engine is stopped, so the new one (waiting for it to drain)
# cannot load yet: a request now has to wait, not fail
my $gen0 = $srv->metric('clef_engine_generation');
kill 'STOP', $engine;
@workers = $srv->worker_pids;
$srv->reload(model => $model1, model_name => 'clef-tiny-3');
ok $srv->wait_for(sub {
        my @w = $srv->worker_pids;
        @w == 2 && !grep { my $o = $_; grep { $_ == $o } @workers } @w
    }, 15), 'the reload started new workers';
my $waiter = fork // die;
if ($waiter == 0) {
    my $r = $srv->post_json($body, {}, 30);
    open my $fh, '>', $srv->prefix . '/tmp/waiter';
    print $fh "$r->{status}\n$r->{content}";
    close $fh;
    POSIX::_exit(0);
}
ok $srv->wait_for(sub { $srv->metric('clef_queue_depth') == 1 }, 10),
    'a request waits while the new engine cannot load';
is $srv->metric('clef_engine_generation'), $gen0,
    'the old engine still owns the queue';
kill 'CONT', $engine;
waitpid $waiter, 0;
my ($wstatus, $wcontent) = split /\n/,
    ClefNginx::slurp($srv->prefix . '/tmp/waiter'), 2;
is $wstatus, 200, 'it is answered once the new model is loaded';
like $wcontent, qr/^\{"model":"clef-tiny-3"/, 'by the new model';
ok !ClefNginx->alive($engine), 'the old engine drained and left';
$m = $srv->metrics;
$engine = $m->{clef_engine_pid};
$keeper = $m->{clef_keeper_pid};

# ---- nginx quit ------------------------------------------------------------------

$srv->stop('QUIT');
ok(ClefNginx->exited($engine) && ClefNginx->exited($keeper),
   'nginx quit returns once the keeper and the engine have exited');
like $srv->log_text, qr/clef engine $engine: drained, exiting/,
    'the engine\'s last line is in the log before nginx is gone';
is_deeply [ $srv->bad_log_lines(qr/exited on signal 9/) ], [],
    'no [alert], [crit] or [emerg] beyond the killed worker and keeper';

# ---- nginx stop (fast shutdown) -----------------------------------------------------

$srv = ClefNginx->new(model => $model1, workers => 1);
$srv->start_ready;
$engine = $srv->metric('clef_engine_pid');
$keeper = $srv->metric('clef_keeper_pid');
is $srv->post_json($body)->{status}, 200, 'a second instance answers';
$srv->stop('TERM');
ok(ClefNginx->exited($engine) && ClefNginx->exited($keeper),
   'nginx stop (SIGTERM, as a supervisor sends it) returns once the keeper '
    . 'and the engine have exited');
like $srv->log_text, qr/clef engine $engine: drained, exiting/,
    'the engine\'s last line is in the log before nginx is gone';
is_deeply [ $srv->bad_log_lines ], [], 'no [alert], [crit] or [emerg]';

done_testing;
