# A media soak with faults, loopback only and bounded (SOAK_SECONDS,
# default 30): clients send a mix of text, JSON states, images, two
# images, videos and hostile files (a garbage video, a truncated PNG, a
# PNG declared as JPEG) while the decode processes and their children are
# killed from outside, the engine is killed once and nginx reloads once.
# Before the soak every distinct request is answered alone; during it:
#
#   valid     a request answered as it was alone (the same JSON)
#   excused   a 503 with Retry-After near a fault (the server's failure,
#             retryable: a killed decode process, a restarting engine)
#   differ    anything else: must be none (a 400 about a good file, a
#             different answer, a 5xx that is not a retryable 503)
#   lost      no answer within the client's timeout: must be none (a
#             keep-alive connection that nginx closed as it reloaded, the
#             request unsent, is excused near the reload: HTTP's own race,
#             which clients retry)
#   hostile   each hostile file's refusal is the one it gets alone
# and afterwards no decode process is left behind.  The figures are
# printed (diag); the assertions are the ones above.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use HTTP::Tiny;
use MIME::Base64 qw(encode_base64);
use POSIX ();
use Time::HiRes qw(sleep time);
use ClefNginx;

my $root = $ClefModels::ROOT;
my $json = ClefNginx->json;
my $seconds = $ENV{SOAK_SECONDS} // 30;
my $clients = 6;

sub file {
    my ($path) = @_;
    open my $fh, '<:raw', "$root/t/fixtures/$path" or die "$path: $!";
    local $/;
    return <$fh>;
}
sub url { my ($type, $bytes) = @_; "data:$type;base64," . encode_base64($bytes, '') }

my %q = (urgent => { type => 'noul', instructions => 'Is it urgent?' },
         team => { type => 'choice', instructions => 'Which team?',
                   criteria => { billing => undef, technical => 'Bugs' } });
sub body {
    my ($state, %media) = @_;
    return $json->encode({ model => 'clef-tiny', state => $state,
                           questions => \%q, %media });
}
# small files: the tiny model's tower runs at one thread
my $png = file('images/corpus/png_rgb_333x777.png');
my $jpg = file('images/corpus/jpg_q90_444_200x150.jpg');
my $mp4 = file('video/clips/h264_160x120_30fps.mp4');
my $webm = file('video/clips/vp8_176x144_24fps.webm');

my @good = (
    body('Payouts have failed for three days.'),
    body('{"ticket": 42, "text": "refund please", "tags": ["billing"]}'),
    body('An image.', images => [ url('image/png', $png) ]),
    body('Two images.', images => [ url('image/png', $png),
                                    url('image/jpeg', $jpg) ]),
    body('A video.', videos => [ url('video/mp4', $mp4) ]),
    body('A WebM video.', videos => [ url('video/webm', $webm) ]),
);
my @hostile = (
    body('Garbage.', videos => [ url('video/mp4',
                                     file('video/clips/garbage.mp4')) ]),
    body('Truncated.', images => [ url('image/png',
                                       substr($png, 0, length($png) / 2)) ]),
    body('Mislabelled.', images => [ url('image/jpeg', $png) ]),
);
my @all = (@good, @hostile);

my $srv = ClefNginx->new(model => ClefNginx->vision_model_dir,
    model_name => 'clef-tiny', workers => 2,
    engine => 'zone=clef:96m timeout=30s decoders=2',
    http_config => "    client_max_body_size 13m;\n");
$srv->start_ready;

# every distinct request alone, one after the other
my @alone;
for my $b (@all) {
    my $r = $srv->post_json($b, {}, 60);
    push @alone, { status => $r->{status}, body => $r->{content} };
}
is_deeply [ map { $_->{status} } @alone[0 .. $#good] ], [ (200) x @good ],
    'every good request alone: 200';
is_deeply [ map { $_->{status} } @alone[@good .. $#all] ], [ (400) x @hostile ],
    'every hostile request alone: 400';

sub decoders {
    my $is = sub { ClefNginx->cmdline($_[0]) =~ /clef-decoder --serve/ };
    my @d = grep { $is->($_) } ClefNginx->descendants_of($srv->pid);
    return @d;
}

# ---- the soak -----------------------------------------------------------------

my $dir = "$srv->{prefix}/soak";
mkdir $dir;
my $t0 = time;
my @kids;
for my $c (0 .. $clients - 1) {
    my $pid = fork // die;
    if ($pid == 0) {
        srand($c + 1);
        open my $out, '>', "$dir/$c" or POSIX::_exit(1);
        my $ua = HTTP::Tiny->new(timeout => 60, keep_alive => 1);
        while (time - $t0 < $seconds) {
            my $i = int rand @all;
            my $sent = time;
            my $r = $ua->request('POST', $srv->base . '/v1/systemone',
                { content => $all[$i],
                  headers => { 'Content-Type' => 'application/json' } });
            my $content = $r->{content} // '';
            $content =~ s/\n/ /g;
            printf $out "%d\t%.3f\t%.3f\t%d\t%s\t%s\n", $i, $sent, time,
                   $r->{status}, $r->{headers}{'retry-after'} // '',
                   $content;
        }
        close $out;
        POSIX::_exit(0);
    }
    push @kids, $pid;
}

# the faults, at fixed points of the soak: decode processes and children
# killed from outside, the engine killed, a reload
my @faults;
my @plan = (0.15 => 'decoder', 0.3 => 'child', 0.45 => 'engine',
            0.6 => 'decoder', 0.7 => 'reload', 0.85 => 'child');
my $reload_at = 0;
while (my ($at, $what) = splice @plan, 0, 2) {
    sleep 0.05 while time - $t0 < $at * $seconds;
    if ($what eq 'decoder') {
        my @d = grep { !decoders_child($_) } decoders();
        kill 'KILL', $d[0] if @d;
    } elsif ($what eq 'child') {
        my $deadline = time + 3;
        my @c;
        while (time < $deadline && !(@c = grep { decoders_child($_) } decoders())) {
            sleep 0.01;
        }
        kill 'KILL', $c[0] if @c;
    } elsif ($what eq 'engine') {
        kill 'KILL', $srv->metric('clef_engine_pid');
    } else {
        $srv->reload;
        $reload_at = time;
    }
    push @faults, time;
}

sub decoders_child {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/stat" or return 0;
    my ($pp) = (<$fh> // '') =~ /^\d+ \(.*\) \S (\d+)/;
    return ClefNginx->cmdline($pp // 0) =~ /clef-decoder --serve/ ? 1 : 0;
}

waitpid $_, 0 for @kids;

# ---- the figures -----------------------------------------------------------------

my %n = map { $_ => 0 } qw(valid excused differ lost hostile_as_alone
                           hostile_other);
my @differ;
for my $c (0 .. $clients - 1) {
    open my $in, '<', "$dir/$c" or next;
    while (<$in>) {
        chomp;
        my ($i, $sent, $done, $status, $retry, $content) = split /\t/, $_, 6;
        my $near = grep { $_ >= $sent - 1 && $_ <= $done + 1 } @faults;
        if ($status == 599 && $content !~ /Timed out/ && $reload_at
            && $sent <= $reload_at + 5 && $done >= $reload_at - 1)
        {
            $n{excused}++;
        } elsif ($status == 599) {
            $n{lost}++;
            push @differ, "request $i lost: $content";
        } elsif ($status == $alone[$i]{status}
                 && $content eq $alone[$i]{body} =~ s/\n/ /gr)
        {
            $n{ $i >= @good ? 'hostile_as_alone' : 'valid' }++;
        } elsif ($status == 503 && $retry ne '' && $near) {
            $n{excused}++;
        } else {
            $n{ $i >= @good ? 'hostile_other' : 'differ' }++;
            push @differ, "request $i: $status $content";
        }
    }
}
diag sprintf "media soak, %d s, %d clients, %d faults: valid %d, excused "
    . "near faults %d, differ %d, lost %d, hostile as alone %d, hostile "
    . "otherwise %d", $seconds, $clients, scalar(@faults), @n{qw(valid
    excused differ lost hostile_as_alone hostile_other)};
ok $n{valid} > 0, "requests answered as alone: $n{valid}";
is $n{differ}, 0, 'none differs from its answer alone'
    or diag join "\n", @differ[0 .. ($#differ < 9 ? $#differ : 9)];
is $n{lost}, 0, 'none lost' or diag join "\n", grep { /lost/ } @differ;
is $n{hostile_other}, 0, 'every hostile file refused as alone';
ok $n{hostile_as_alone} > 0, "hostile files refused: $n{hostile_as_alone}";

ok $srv->wait_for(sub { $srv->metric('clef_engine_state{state="ready"}') == 1 }, 30),
    'the engine serves afterwards';
is $srv->post_json($good[4], {}, 60)->{content}, $alone[4]{body},
    'a video afterwards is answered as alone';
is_deeply [ $srv->bad_log_lines(qr/clef keeper: engine \d+ killed by signal 9/) ],
    [], 'no [alert], [crit] or [emerg] but the engine killed';
my @left = decoders();
$srv->stop;
ok !grep({ ClefNginx->alive($_) } @left, decoders()),
    'no decode process left after nginx stops';

done_testing;
