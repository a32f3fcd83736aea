# Clef Omni through nginx: requests of t/fixtures/e2e/omni1.jsonl (text
# and images) on the checkpoint they were computed on get what `clef
# decide` answers (the same JSON), the reference's token count and its
# probabilities within rounding (transformers 5.10.2's Qwen3-Omni thinker
# and Cloudflare's Omni ClefModel); /v1/models names the model Clef Omni;
# a request with audio is answered, or refused for its own reason (videos:
# nginx-omni-videos.t; audio against the reference: nginx-omni-audio.t).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClefTest;
use Test::Nginx::Socket 'no_plan';
use MIME::Base64 qw(encode_base64);

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

# The body of t/fixtures/e2e/omni1_audio.jsonl's case wav-tone-16k, its
# clip inlined (the reference's input_tokens: 174).
sub tone_request {
    open my $wav, '<:raw', "$root/t/fixtures/audio/clips/tone16k.wav" or die $!;
    local $/;
    return "POST /v1/systemone\n"
         . '{"model":"clef-omni","state":"Listen to the clips.","audio":'
         . '["data:audio/wav;base64,' . encode_base64(<$wav>, '') . '"],'
         . '"questions":{"sound":{"type":"choice","instructions":'
         . '"What makes this sound?","criteria":{"bird":null,"engine":'
         . '"an engine","voice":"a human voice","nothing":"silence"}}}}';
}

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
    if (defined $b->input_tokens) {
        my $got = eval { $json->decode($body) } // {};
        is $got->{usage}{input_tokens}, $b->input_tokens,
           $b->name . ': input_tokens, the reference\'s';
    }
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
--- response_body_like: "description":"Clef Omni decision model clef-omni: 4 layers, hidden size 64, BF16 weights, cpu backend; text, images \(PNG, JPEG, WebP\), audio \(WAV, FLAC, MP3, Ogg, M4A/AAC, WebM\) and videos with their sound \(MP4, Matroska, WebM\)".*"capabilities":\["systemone","images","videos","audio"\],"max_images":4,"max_videos":2,"max_audio":4\}

=== TEST 9: audio that is only "RIFF": refused for what it is, not for being audio
--- request
POST /v1/systemone
{"model":"m","state":"s","questions":{"q":{"type":"noul"}},"audio":["data:audio/wav;base64,UklGRg=="]}
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"audio_invalid","message":"Audio clip 0 is not a WAV, FLAC, MP3, Ogg, MP4/M4A, AAC or WebM file (its first bytes are none of their signatures).","loc":["body","audio",0]}}

=== TEST 10: a WAV clip: the answer of clef decide, the reference's input_tokens
--- request eval
main::tone_request()
--- decide
--- input_tokens: 174
