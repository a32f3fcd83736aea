# Clef Omni through nginx: requests of t/fixtures/e2e/omni1.jsonl (text
# and images) on the checkpoint they were computed on get what `clef
# decide` answers (the same JSON), the reference's token count and its
# probabilities within rounding (transformers 5.10.2's Qwen3-Omni thinker
# and Cloudflare's Omni ClefModel); /v1/models names the model Clef Omni;
# a request with audio is refused by name (videos: nginx-omni-videos.t).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClefTest;
use Test::Nginx::Socket 'no_plan';

master_on();
repeat_each(2);

clef_defaults(model => ClefModels->omni_model_dir,
              name => 'clef-omni',
              engine => 'zone=clef:64m timeout=30s',
              http => "    client_max_body_size 13m;\n");

my $root = $ClefModels::ROOT;
my $json = ClefModels->json;

open my $fh, '<', "$root/t/fixtures/e2e/omni1.jsonl" or die $!;
my %cases = map { my $c = $json->decode($_); ($c->{name} => $c) } <$fh>;
close $fh;

add_block_preprocessor(sub {
    my $b = shift;
    $b->set_value(more_headers => 'Content-Type: application/json');
    $b->set_value(timeout => 60);
    if (defined $b->case) {
        my $c = $cases{ $b->case } or die "no fixture case " . $b->case;
        $b->set_value(request => "POST /v1/systemone\n" . $c->{body});
        $b->set_value(decide => 1);
    }
});

# The reference's token count, and every probability within the 4-decimal
# rounding of the reference's (options in the encoder's order).
add_response_body_check(sub {
    my ($b, $body) = @_;
    return unless defined $b->case;
    my $c = $cases{ $b->case };
    my $got = eval { $json->decode($body) } // {};
    is $got->{usage}{input_tokens}, $c->{input_tokens},
       $b->name . ': input_tokens, the reference\'s';
    my $worst = 0;
    for my $q (@{ $c->{questions} }) {
        my $ans = $got->{answers}{ $q->{id} } // {};
        my @opts = @{ $q->{options} };
        my @p = ($ans->{type} // '') eq 'noul'
              ? ($ans->{noul}, 1 - ($ans->{noul} // 9))
              : map { $ans->{probabilities}{$_} } @opts;
        for my $i (0 .. $#opts) {
            my $d = abs(($p[$i] // 9) - $q->{probabilities}[$i]);
            $worst = $d if $d > $worst;
        }
    }
    cmp_ok $worst, '<=', 1.01e-4,
           $b->name . ': probabilities within rounding of the reference';
});

run_tests();

__DATA__

=== TEST 1: text, three question types: the answer of clef decide
--- case: mixed-three

=== TEST 2: an object state, noul criteria
--- case: noul-criteria

=== TEST 3: twelve questions
--- case: many-questions

=== TEST 4: one image, upscaled into the processor's bounds
--- case: image-png-upscaled

=== TEST 5: a JPEG with an EXIF rotation, not turned (PIL's open)
--- case: image-jpeg-exif-not-turned

=== TEST 6: a 3000 x 5000 JPEG, scaled within 1024 x 1024 pixels
--- case: image-jpeg-downscaled

=== TEST 7: three images, each with its own newline
--- case: image-three

=== TEST 8: /v1/models: Clef Omni
--- request
GET /v1/models
--- error_code: 200
--- response_body_like: "description":"Clef Omni decision model clef-omni: 4 layers, hidden size 64, BF16 weights, cpu backend; text, images \(PNG, JPEG, WebP\) and videos without sound.*"capabilities":\["systemone","images","videos"\]

=== TEST 9: audio is refused by name (the CPU backend has no audio encoder yet)
--- request
POST /v1/systemone
{"model":"m","state":"s","questions":{"q":{"type":"noul"}},"audio":["data:audio/wav;base64,UklGRg=="]}
--- error_code: 400
--- response_body_like: "error_type":"audio_unsupported","message":"This model does not accept audio clips \(1 given\): remove \\"audio\\"; text, JSON states and images are supported.","loc":\["body","audio"\]
