# A model the engine cannot read.  The engine runs as the workers' user
# (here nobody, under a root master), so nginx -t, a start and a reload
# open every file of the model as that user first: a directory or a file
# root can read and nobody cannot keeps nginx from starting, with a message
# naming the file, the user and the fix.  A model that becomes unreadable
# later (here: after the engine loaded it, which is then killed) keeps the
# keeper's retry, and /status says why the engine is not ready.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClefTest;
use Test::Nginx::Socket 'no_plan';
use File::Copy qw(copy);
use File::Temp qw(tempdir);

master_on();
repeat_each(2);
$Test::Nginx::Util::WorkerUser = 'nobody nogroup';

# copies of the tiny model, one per case, in a directory nobody may enter
my $model = ClefModels->model_dir(1);
my $dir = tempdir('clef-access-XXXXXX', TMPDIR => 1, CLEANUP => 1);
chmod 0755, $dir;
for my $case (qw(ok closed-dir closed-file later)) {
    mkdir "$dir/$case" or die $!;
    opendir my $d, $model or die $!;
    for my $f (grep { -f "$model/$_" } readdir $d) {
        copy("$model/$f", "$dir/$case/$f") or die "$f: $!";
        chmod 0644, "$dir/$case/$f";
    }
    chmod 0755, "$dir/$case";
}
chmod 0700, "$dir/closed-dir";
chmod 0600, "$dir/closed-file/joint_head.safetensors";
$ENV{TEST_NGINX_CLEF_MODELS} = $dir;

clef_defaults(model => $model);   # what --- decide answers

our $Http = <<'_EOC_';
    clef_model clef-tiny $TEST_NGINX_CLEF_MODELS/%s threads=1;
    clef_engine zone=clef:32m timeout=10s;
_EOC_

# --- case: NAME picks the copy; messages name it as nginx was given it
add_block_preprocessor(sub {
    my $b = shift;
    $b->set_value(http_config => sprintf $Http, $b->case);
    if (defined $b->must_die) {
        (my $want = $b->error_log) =~ s/DIR/$dir/g;
        chomp $want;
        $b->set_value(error_log => [ '[emerg]', $want ]);
        $b->set_value(suppress_stderr => 1);
    }
});

# The engine of the running nginx, from /clef-status.
sub status {
    require HTTP::Tiny;
    my $r = HTTP::Tiny->new(timeout => 5)->get(
        "http://127.0.0.1:$Test::Nginx::Util::ServerPort/clef-status");
    return $r->{content} // '';
}

# Takes the model away from an engine that has loaded it, then kills the
# engine: its keeper starts another, which cannot load it.
sub break_later {
    my $deadline = time + 30;
    sleep 0.1 until status() =~ /^clef_engine_state\{state="ready"\} 1$/m
                    || time > $deadline;
    my ($pid) = status() =~ /^clef_engine_pid (\d+)$/m or die "no engine";
    chmod 0600, "$dir/later/config.json";
    kill 'KILL', $pid;
    sleep 0.1 until status() =~ /^clef_engine_state\{state="failed"\} 1$/m
                    || time > $deadline;
}

run_tests();

chmod 0644, "$dir/later/config.json";

__DATA__

=== TEST 1: a model directory nobody may enter keeps nginx from starting
--- case: closed-dir
--- must_die
--- error_log
clef_model "clef-tiny": the engine runs as user "nobody", who cannot open "DIR/closed-dir"; make the model readable by that user (for instance chmod -R a+rX DIR/closed-dir), or run nginx's workers as a user who can read it (the "user" directive) (13: Permission denied)

=== TEST 2: one file nobody may read: that file is named
--- case: closed-file
--- must_die
--- error_log
clef_model "clef-tiny": the engine runs as user "nobody", who cannot open "DIR/closed-file/joint_head.safetensors"; make the model readable by that user

=== TEST 3: the same model readable by nobody is served
--- case: ok
--- request
POST /v1/systemone
{"model":"m","state":"Help!","questions":{"q":{"type":"noul"}}}
--- more_headers
Content-Type: application/json
--- decide

=== TEST 4: a model that becomes unreadable later: the keeper retries, /status says why
--- case: later
--- init
main::break_later();
--- request
GET /clef-status
--- error_code: 200
--- response_body_like
clef_engine_state\{state="failed"\} 1
.*clef_engine_message\{message="cannot load the model: [^"]*config\.json[^"]*Permission denied[^"]*"\} 1
--- no_error_log
[alert]
[crit]
--- shutdown_error_log
clef: waiting for 1 engine to drain
