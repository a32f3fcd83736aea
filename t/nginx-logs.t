# The keeper and the engine as nginx's own processes behave:
#   - their stdin and stdout are /dev/null and their stderr the error log,
#     never the terminal or pipe nginx was started from (a `nginx 2>&1 |
#     tee` ends with nginx; prove ends with TEST_NGINX_NO_CLEAN=1);
#   - after a logrotate-style rename and `nginx -s reopen` (SIGUSR1), their
#     lines go to the new error.log, none to the rotated one;
#   - an error log the configuration moves elsewhere gets their lines too
#     (under TEST_NGINX_USE_HUP=1, a reload that keeps the keeper);
#   - (every Test::Nginx suite checks that nginx's stop returns after the
#     engine's "drained, exiting"; t/nginx-lifecycle.t does for quit and
#     for SIGTERM).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClefTest;
use Test::Nginx::Socket 'no_plan';
use HTTP::Tiny;
use Time::HiRes qw(sleep time);

our $restarted;    # the engine the keeper started after the rotation

master_on();
repeat_each(2);
check_accum_error_log();    # the init's lines, read by every repetition

clef_defaults(model => ClefModels->model_dir(1));

sub status {
    my $r = HTTP::Tiny->new(timeout => 5)->get(
        "http://127.0.0.1:$Test::Nginx::Util::ServerPort/clef-status");
    my %m = ($r->{content} // '') =~ /^(\S+) (\S+)$/mg;
    return \%m;
}

sub ready {
    my ($not) = @_;
    my $deadline = time + 30;
    while (time < $deadline) {
        my $m = status();
        return $m if ($m->{'clef_engine_state{state="ready"}'} // 0) == 1
                     && ($m->{clef_engine_pid} // 0) != ($not // 0);
        sleep 0.05;
    }
    die "the engine did not become ready";
}

sub fd { readlink "/proc/$_[0]/fd/$_[1]" // '?' }

# stdin, stdout, stderr of the keeper and the engine
sub stdio {
    my $m = ready();
    # an error log of this nginx (under TEST_NGINX_USE_HUP, the one of an
    # earlier block until the next line follows the new one)
    my $log = qr{^\Q$Test::Nginx::Util::ServRoot/logs/\E(?:error|moved)\.log(?: \(deleted\))?$};
    for my $who (qw(keeper engine)) {
        my $pid = $m->{"clef_${who}_pid"};
        is fd($pid, 0), '/dev/null', "the ${who}'s stdin is /dev/null";
        is fd($pid, 1), '/dev/null', "the ${who}'s stdout is /dev/null";
        like fd($pid, 2), $log, "the ${who}'s stderr is the error log";
    }
}

# logrotate: rename, nginx -s reopen; then the engine is killed, and the
# keeper and the new engine have something to say
sub rotate {
    my $log = $Test::Nginx::Util::ErrLogFile;
    my $engine = ready()->{clef_engine_pid};
    rename $log, "$log.1" or die "rename: $!";
    my $master = Test::Nginx::Util::get_pid_from_pidfile('rotate');
    kill 'USR1', $master;
    my $deadline = time + 10;
    sleep 0.02 until -e $log || time > $deadline;
    kill 'KILL', $engine;
    $main::restarted = ready($engine)->{clef_engine_pid};
}

# --- rotated: the rotated file got none of the lines of the restart
add_response_body_check(sub {
    my ($b) = @_;
    return unless defined $b->rotated;
    open my $fh, '<', "$Test::Nginx::Util::ErrLogFile.1" or die $!;
    my @late = grep { /killed by signal 9|engine $main::restarted\b/ } <$fh>;
    is_deeply \@late, [], $b->name . ': nothing of them in the rotated file';
});

# --- moved_log: the error log of the block's configuration
sub moved_restart {
    my $engine = ready()->{clef_engine_pid};
    kill 'KILL', $engine;
    ready($engine);
}
add_response_body_check(sub {
    my ($b) = @_;
    return unless defined $b->moved_log;
    my $f = "$Test::Nginx::Util::ServRoot/logs/moved.log";
    open my $fh, '<', $f or die "$f: $!";
    my $text = do { local $/; <$fh> };
    like $text, qr/clef keeper: engine \d+ killed by signal 9/,
         $b->name . ': the keeper writes to the new error log';
    like $text, qr/clef engine \d+: ready in/,
         $b->name . ': and so does the engine';
});

run_tests();

__DATA__

=== TEST 1: stdin and stdout on /dev/null, stderr the error log
--- init
main::stdio();
--- request
GET /v1/models
--- error_code: 200

=== TEST 2: logrotate: rename, nginx -s reopen; the new lines go to the new file
--- init
main::rotate();
--- request
GET /v1/models
--- error_code: 200
--- error_log eval
[qr/clef keeper: engine \d+ killed by signal 9; restarting/,
 qr/clef keeper \d+: started engine \d+/,
 qr/clef engine \d+: ready in/]
--- rotated

=== TEST 3: an error log moved by the configuration gets the keeper's and the engine's lines
--- error_log_file: $TEST_NGINX_SERVER_ROOT/logs/moved.log
--- init
main::moved_restart();
--- request
GET /v1/models
--- error_code: 200
--- moved_log
--- shutdown_error_log
--- no_shutdown_error_log
--- no_error_log
