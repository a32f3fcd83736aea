# The engine's decode processes under the conditions operators meet
# (docs/design/media.md, "Media workers and decode processes"):
#
#   1. nginx started with OMP_NUM_THREADS=1 and OPENBLAS_NUM_THREADS=1 in
#      its environment, and on one CPU (affinity): videos and images are
#      decoded, and answer what `clef decide` answers;
#   2. a decode process killed while idle: noticed at once (logged with
#      its signal, counted in /status with its cause), reaped (no zombie),
#      restarted, and the next video is answered;
#   3. no head-of-line blocking, checked by the order of events, never a
#      clock: with both decode processes held (stopped), two video
#      requests wait while a text request sent after them is answered;
#      the held processes, killed from outside, make those two videos 503
#      with Retry-After (the server's failure, never a 400 about the file);
#   4. a hostile decode process (build/t/clef-decoder-hostile: the file
#      picks what its child answers, t/decoder/hostile.c): statuses and
#      types outside the closed list, sizes beyond the request's, short
#      answers are the file's 400, nothing is allocated as told; a flood on
#      its stderr reaches the error log rate-limited, control bytes made
#      harmless; a child killed from outside mid-decode is the server's
#      503; a client that goes away has its decode killed.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MIME::Base64 qw(encode_base64);
use POSIX ();
use Time::HiRes qw(sleep time);
use ClefNginx;

my $root = $ClefModels::ROOT;
my $json = ClefNginx->json;
my $model = ClefNginx->vision_model_dir;

sub file_b64 {
    my ($path) = @_;
    open my $fh, '<:raw', "$root/t/fixtures/$path" or die "$path: $!";
    local $/;
    return encode_base64(<$fh>, '');
}

my $clip = 'data:video/mp4;base64,'
         . file_b64('video/clips/h264_640x360_bframes.mp4');
my ($png) = glob "$root/t/fixtures/images/corpus/*.png";
$png =~ s{^\Q$root\E/t/fixtures/}{};
my $image = 'data:image/png;base64,' . file_b64($png);

sub body {
    my (%media) = @_;
    return $json->encode({ model => 'clef-tiny', state => 'A clip.',
                           questions => { q => { type => 'noul',
                                          instructions => 'Is it moving?' } },
                           %media });
}

my $video_body = body(videos => [ $clip ]);
my $image_body = body(images => [ $image ]);
my $text_body = body();

# the decode processes of this nginx: clef-decoder --serve below it (not
# their children, which run the same program)
sub parent_of {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/stat" or return 0;
    return ((<$fh> // '') =~ /^\d+ \(.*\) \S (\d+)/)[0] // 0;
}
sub decoders {
    my ($srv) = @_;
    my $is = sub { ClefNginx->cmdline($_[0]) =~ /clef-decoder\S* --serve/ };
    return grep { $is->($_) && !$is->(parent_of($_)) }
           ClefNginx->descendants_of($srv->pid);
}

sub answers_as_decide {
    my ($srv, $body, $what) = @_;
    my $r = $srv->post_json($body, {}, 60);
    is $r->{status}, 200, "$what: 200" or diag $r->{content};
    is_deeply $r->{json}, $srv->decide($body),
        "$what: what clef decide answers";
}

# ---- 1. the environment of containers ---------------------------------------

{
    local $ENV{OMP_NUM_THREADS} = 1;
    local $ENV{OPENBLAS_NUM_THREADS} = 1;
    my $srv = ClefNginx->new(model => $model, model_name => 'clef-tiny',
        engine => 'zone=clef:64m timeout=60s',
        http_config => "    client_max_body_size 13m;\n");
    $srv->start_ready;
    answers_as_decide($srv, $video_body,
                      'OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1, a video');
    answers_as_decide($srv, $image_body,
                      'OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1, an image');
    $srv->stop;
}

{
    # one CPU: nginx, its engine and its decoders inherit this affinity
    my $mask = `taskset -p $$`;
    system("taskset -p -c 0 $$ >/dev/null") == 0 or die "taskset: $?";
    my $srv = ClefNginx->new(model => $model, model_name => 'clef-tiny',
        engine => 'zone=clef:64m timeout=60s',
        http_config => "    client_max_body_size 13m;\n");
    $srv->start_ready;
    my ($dec) = decoders($srv);
    answers_as_decide($srv, $video_body, 'one CPU, a video');
    ($dec) = decoders($srv);
    like `taskset -p $dec`, qr/affinity mask: 1$/m,
        'the decode process runs on that one CPU';
    $srv->stop;
    my ($hex) = $mask =~ /mask: ([0-9a-f]+)/;
    system("taskset -p $hex $$ >/dev/null");
}

# ---- 2. killed while idle ------------------------------------------------------

my $srv = ClefNginx->new(model => $model, model_name => 'clef-tiny',
    engine => 'zone=clef:64m timeout=60s decoders=2',
    http_config => "    client_max_body_size 13m;\n");
$srv->start_ready;
is $srv->metric('clef_decoders'), 2, '/status: 2 decode processes (decoders=2)';
is $srv->metric('clef_decoder_starts_total'), 0,
    'none started before the first media request';
answers_as_decide($srv, $video_body, 'a video');
my @dec = decoders($srv);
is scalar(@dec), 1, 'one decode process started by it';
kill 'KILL', $dec[0];
ok $srv->wait_for(sub {
    $srv->log_text =~ /clef decoder \d: the decode process pid $dec[0] killed by signal 9 \(Killed\) while idle; restarting it/
}, 5), 'the death while idle is noticed and logged at once, with its signal';
ok $srv->wait_for(sub { ClefNginx->exited($dec[0])
                        && !-e "/proc/$dec[0]" }, 5), 'and reaped (no zombie)';
ok $srv->wait_for(sub { $srv->metric('clef_decoder_restarts_total') == 1 }, 5),
    '/status: restarted once';
my $m = $srv->metrics;
is $m->{clef_decoder_deaths_total}, 1, '/status: one death';
like $srv->request('GET', '/clef-status')->{content},
    qr/^clef_decoder_last_death_timestamp_seconds\{cause="decoder \d: pid $dec[0] killed by signal 9 \(Killed\) while idle"\} \d{10}\.\d{3}$/m,
    '/status: the last death, its time and its cause';
my @again = decoders($srv);
is scalar(@again), 1, 'a decode process runs again';
isnt $again[0], $dec[0], 'a new one';
answers_as_decide($srv, $video_body, 'the next video after the restart');

# ---- 3. no head-of-line blocking ----------------------------------------------

# both lanes started (two videos at once, until each lane has taken one)
for (1 .. 10) {
    last if decoders($srv) == 2;
    $srv->parallel(2, 1, sub { $video_body }, 60);
}
@dec = decoders($srv);
is scalar(@dec), 2, 'two decode processes run';
kill 'STOP', @dec;

my $dir = "$srv->{prefix}/hol";
mkdir $dir;
my @kids;
for my $k (0, 1) {
    my $pid = fork // die;
    if ($pid == 0) {
        my $r = $srv->post_json($video_body, {}, 60);
        open my $out, '>', "$dir/video$k.tmp";
        print $out $json->encode({ status => $r->{status},
                                   retry => $r->{headers}{'retry-after'},
                                   body => $r->{json} });
        close $out;
        rename "$dir/video$k.tmp", "$dir/video$k";
        POSIX::_exit(0);
    }
    push @kids, $pid;
}
# both taken by the engine and handed to the (held) decode processes
ok $srv->wait_for(sub { $srv->metric('clef_slots_in_use') >= 2 }, 10),
    'the two video requests are in';
sleep 0.3;
my $text = $srv->post_json($text_body, {}, 30);
is $text->{status}, 200, 'a text request sent after them is answered';
ok !-e "$dir/video0" && !-e "$dir/video1",
    'while both video requests still wait for their decode';

kill 'KILL', @dec;
waitpid $_, 0 for @kids;
for my $k (0, 1) {
    my $v = $json->decode(ClefNginx::slurp("$dir/video$k"));
    is $v->{status}, 503, "video $k: 503 when its decode process is killed "
                        . 'from outside';
    is $v->{retry}, 1, "video $k: Retry-After: 1";
    like $v->{body}{errors}[0]{message} // $v->{body}{error}{message}
         // $json->encode($v->{body}),
        qr/the decode process stopped .*; retry/, "video $k: says why";
}
ok $srv->wait_for(sub { $srv->metric('clef_decoder_restarts_total') >= 3 }, 10),
    'both decode processes restarted';
answers_as_decide($srv, $video_body, 'a video afterwards');

is_deeply [ $srv->bad_log_lines ], [], 'no [alert], [crit] or [emerg]';
$srv->stop;
ok !grep({ ClefNginx->alive($_) } decoders($srv)), 'no decode process left';

# ---- 4. a hostile decoder -------------------------------------------------------

my $hostile_bin = "$root/build/t/clef-decoder-hostile";
my $raw_png = do {
    open my $fh, '<:raw', "$root/t/fixtures/$png" or die $!;
    local $/;
    <$fh>;
};
sub hostile_body {
    my ($mode) = @_;
    return body(images => [ 'data:image/png;base64,'
                            . encode_base64($raw_png . "HOSTILE:$mode", '') ]);
}
sub detail_of {
    my ($r) = @_;
    return $r->{json}{detail}{error_type} // $r->{json}{errors}[0]{code}
           // '', $r->{json}{detail}{message}
           // $r->{json}{errors}[0]{message} // $r->{content};
}

SKIP: {
    skip 'no hostile decoder (a build with FFMPEG=no)', 1 unless -x $hostile_bin;
    local $ENV{CLEF_DECODER} = $hostile_bin;
    my $h = ClefNginx->new(model => $model, model_name => 'clef-tiny',
        engine => 'zone=clef:64m timeout=60s decoders=1',
        http_config => "    client_max_body_size 13m;\n");
    $h->start_ready;
    answers_as_decide($h, $image_body, 'hostile build, an ordinary image');

    my %want = (
        status => qr/^Image 0 cannot be decoded: the decoder failed on it\.$/,
        kind   => qr/^Image 0 cannot be decoded: the decoder failed on it\.$/,
        size   => qr/^Image 0 cannot be decoded: the decoder's answer was malformed\.$/,
        short  => qr/^Image 0 cannot be decoded: the decoder ended \(exit 0\) without an answer\.$/,
        spam   => qr/^Image 0 cannot be decoded: the decoder failed on it\.$/,
    );
    for my $mode (sort keys %want) {
        my $r = $h->post_json(hostile_body($mode), {}, 60);
        is $r->{status}, 400, "hostile $mode: 400";
        my ($type, $msg) = detail_of($r);
        is $type, 'image_invalid', "hostile $mode: image_invalid";
        like $msg, $want{$mode}, "hostile $mode: says what happened";
    }
    my @spam = $h->log_text =~ /(clef decoder 0 \(image 0 of record \d+\): hostile decoder line \d+: \?\[31mred\?\[0m)/g;
    ok @spam >= 5 && @spam <= 25, 'a stderr flood: ' . scalar(@spam)
        . ' of its 5000 lines in the error log, named after the item, '
        . 'control bytes replaced';
    like $h->log_text, qr/clef decoder 0: \d+ lines of its stderr dropped/,
        'and what was dropped is said';

    # a child killed from outside while it decodes
    my $out = "$h->{prefix}/hang";
    my $kid = fork // die;
    if ($kid == 0) {
        my $r = $h->post_json(hostile_body('hang'), {}, 60);
        open my $fh, '>', "$out.tmp";
        print $fh $json->encode({ status => $r->{status},
                                  retry => $r->{headers}{'retry-after'},
                                  detail => [ detail_of($r) ] });
        close $fh;
        rename "$out.tmp", $out;
        POSIX::_exit(0);
    }
    my @child;
    ok $h->wait_for(sub {
        @child = map { ClefNginx->children_of($_) } decoders($h);
        @child == 1 }, 10), 'the hanging child decodes';
    kill 'KILL', @child;
    waitpid $kid, 0;
    my $v = $json->decode(ClefNginx::slurp($out));
    is $v->{status}, 503, 'a child killed from outside: 503';
    is $v->{retry}, 1, 'with Retry-After: 1';
    is $v->{detail}[0], 'service_unavailable', 'service_unavailable';
    like $v->{detail}[1], qr/^Image 0 was not decoded: the decode process was killed from outside the server \(signal 9, Killed: the kernel's OOM killer or an operator\); retry\.$/,
        'naming the cause';

    # a client that goes away: its decode is killed
    my $gone = $h->post_json(hostile_body('hang'), {}, 1);
    is $gone->{status}, 599, 'a client that gives up after 1 s';
    ok $h->wait_for(sub {
        !map { ClefNginx->children_of($_) } decoders($h) }, 10),
        'its decode is killed';
    answers_as_decide($h, $image_body, 'and the next image is answered');
    is_deeply [ $h->bad_log_lines ], [], 'hostile: no [alert], [crit] or [emerg]';
    $h->stop;
}

done_testing;
