# GGUF models behind nginx (README "GGUF"): llama.cpp's Q4_K_M file of the
# gg1 checkpoint served as `clef_model NAME FILE.gguf`, its F16 file with
# the mmproj; the answers are clef decide's on the same file, and
# /v1/models says how the weights are stored and the precision they are
# multiplied in.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use ClefNginx;

my $gguf = "$FindBin::Bin/../t/fixtures/gguf";
my $body = {
    model => 'm', state => 'Help! My payouts have been failing for 3 days.',
    questions => {
        is_urgent => { type => 'noul', instructions => 'Does this convey urgency?' },
        about_money => { type => 'noul', instructions => 'Is this about money?' },
    },
};

for my $c ([ 'q4_k_m', 'Q4_K_M', '' ],
           [ 'f16', 'F16', " mmproj=$gguf/gg1.mmproj.gguf" ])
{
    my ($type, $weights, $mmproj) = @$c;
    my $srv = ClefNginx->new(model => "$gguf/gg1.$type.gguf",
                             model_opts => "threads=1$mmproj");
    $srv->start_ready;
    my $r = $srv->post_json($body, undef, 60);
    is $r->{status}, 200, "$type: 200" or diag $r->{content};
    if ($mmproj eq '') {
        is_deeply $r->{json}, $srv->decide($body),
                  "$type: the answer of clef decide on the same file";
    } else {
        ok defined $r->{json}{answers}{about_money}{noul},
           "$type with its mmproj: answers";
    }
    my $m = $srv->request('GET', '/v1/models')->{json}{models}[0];
    is $m->{weights}, $weights, "$type: /v1/models weights $weights";
    is $m->{precision}, 'fp32', "$type: /v1/models precision fp32 (the CPU's)";
    is_deeply $m->{capabilities},
              $mmproj eq '' ? [ 'systemone' ] : [ 'systemone', 'images' ],
              "$type: capabilities" . ($mmproj eq '' ? '' : ': images, with'
                                                   . ' the mmproj');
    $srv->stop;
}

done_testing;
