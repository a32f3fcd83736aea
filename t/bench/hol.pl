# The latency of a text request sent behind two long videos (t/bench/hol.sh
# runs it against two builds): nginx with the module CLEF_MODULE on the
# image fixtures' checkpoint, two clients each sending VIDEO, then, once
# the engine has taken both, one text request; its latency and the videos'
# are printed as "text_ms video_ms video_ms".  ROUNDS of them.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use MIME::Base64 qw(encode_base64);
use POSIX ();
use Time::HiRes qw(time sleep);
use ClefNginx;

my ($video, $rounds) = @ARGV;
$rounds //= 3;
my $json = ClefNginx->json;
my $bytes = do { open my $fh, '<:raw', $video or die "$video: $!"; local $/; <$fh> };
my %q = (q => { type => 'noul', instructions => 'Is it moving?' });
my $vbody = $json->encode({ model => 'm', state => 'A clip.', questions => \%q,
    videos => [ 'data:video/mp4;base64,' . encode_base64($bytes, '') ] });
my $tbody = $json->encode({ model => 'm', state => 'Payouts failed.',
                            questions => \%q });

my $srv = ClefNginx->new(model => ClefNginx->vision_model_dir, workers => 2,
    engine => 'zone=clef:128m timeout=600s',
    http_config => "    client_max_body_size 64m;\n");
$srv->start_ready;
# the decode processes started, warm
$srv->post_json($vbody, {}, 600) for 1 .. 2;
for my $r (1 .. $rounds) {
    my $dir = "$srv->{prefix}/r$r";
    mkdir $dir;
    my @kids;
    for my $k (0, 1) {
        my $pid = fork // die;
        if ($pid == 0) {
            my $t = time;
            my $res = $srv->post_json($vbody, {}, 600);
            open my $fh, '>', "$dir/$k";
            printf $fh "%.1f %d\n", (time - $t) * 1000, $res->{status};
            close $fh;          # _exit flushes nothing
            POSIX::_exit(0);
        }
        push @kids, $pid;
    }
    $srv->wait_for(sub { $srv->metric('clef_slots_in_use') >= 2 }, 10);
    sleep 0.2;
    my $t = time;
    my $res = $srv->post_json($tbody, {}, 600);
    my $text = (time - $t) * 1000;
    waitpid $_, 0 for @kids;
    my @v = map { my @f = split ' ', ClefNginx::slurp("$dir/$_");
                  $f[1] && $f[1] == 200 ? $f[0] : "failed:" . ($f[1] // '?') }
            0, 1;
    printf "%.1f %s %s %d\n", $text, @v, $res->{status};
}
$srv->stop;
