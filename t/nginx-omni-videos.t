# Clef Omni's videos through nginx (docs/design/omni.md): requests of
# t/fixtures/vision/omni_videos.jsonl on the checkpoint they were computed
# on get what `clef decide` answers (the same JSON), the reference's token
# count and its probabilities within rounding (Cloudflare's Omni
# joint_schema_model.py: PyAV frames at 2 a second, Qwen3-Omni's
# processor, the thinker with DeepStack); a record whose every video has an
# audio track is heard (t/fixtures/vision/omni_avideos.jsonl: each track
# interleaved with its frames, use_audio_in_video), one silent video beside
# one with sound turns the sound off; media_kwargs beside videos are
# refused; /v1/models says Clef Omni takes videos with their sound.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClefTest;
use Test::Nginx::Socket 'no_plan';
use MIME::Base64 qw(encode_base64);
use JSON::PP;

master_on();
repeat_each(2);

clef_defaults(model => ClefModels->omni_model_dir,
              name => 'clef-omni',
              engine => 'zone=clef:64m timeout=60s',
              http => "    client_max_body_size 13m;\n");

my $root = $ClefModels::ROOT;
my $json = ClefModels->json;
my %types = (mp4 => 'video/mp4', mkv => 'video/x-matroska',
             webm => 'video/webm', png => 'image/png', jpg => 'image/jpeg',
             webp => 'image/webp', wav => 'audio/wav',
             flac => 'audio/flac', mp3 => 'audio/mpeg',
             m4a => 'audio/mp4');

sub file_b64 {
    my ($path) = @_;
    open my $fh, '<:raw', "$root/t/fixtures/$path" or die "$path: $!";
    local $/;
    return encode_base64(<$fh>, '');
}

# "clip:NAME", "corpus:NAME" or "sound:NAME" as a data URL
sub data_url {
    my ($ref) = @_;
    my ($where, $name) = split /:/, $ref, 2;
    my ($ext) = $name =~ /\.(\w+)$/;
    my $dir = $where eq 'clip' ? 'video/clips'
            : $where eq 'sound' ? 'audio/clips' : 'images/corpus';
    return "data:$types{$ext};base64," . file_b64("$dir/$name");
}

# Each case, and its body's text as the fixture has it (a question
# object's key order is the prompt's).
my (%cases, %bodies);
for my $file (qw(omni_videos omni_avideos)) {
    open my $fh, '<', "$root/t/fixtures/vision/$file.jsonl" or die $!;
    for my $line (<$fh>) {
        my $c = $json->decode($line);
        $cases{ $c->{name} } = $c;
        my $at = index($line, '"body": ') + 8;
        my (undef, $n) = JSON::PP->new->decode_prefix(substr $line, $at);
        $bodies{ $c->{name} } = substr $line, $at, $n;
    }
    close $fh;
}

sub case_request {
    my ($name) = @_;
    my $c = $cases{$name} or die "no fixture case $name";
    (my $body = $bodies{$name}) =~ s/"((?:clip|corpus|sound):[^"]+)"/'"' . data_url($1) . '"'/ge;
    return "POST /v1/systemone\n" . $body;
}

# --- case: NAME posts fixture case NAME and expects what clef decide
# answers; --- refused: NAME posts it and expects its refusal
add_block_preprocessor(sub {
    my $b = shift;
    $b->set_value(more_headers => 'Content-Type: application/json');
    $b->set_value(timeout => 120);
    if (defined $b->case) {
        $b->set_value(request => case_request($b->case));
        $b->set_value(decide => 1);
    }
    if (defined $b->refused) {
        my $c = $cases{ $b->refused };
        $b->set_value(request => case_request($b->refused));
        $b->set_value(error_code => 400);
        $b->set_value(response_body_like => "\"error_type\":\"$c->{error}\"")
            unless defined $b->response_body_like;
    }
});

# The reference's token count, and every probability within the 4-decimal
# rounding of the reference's (options in the encoder's order).
add_response_body_check(sub {
    my ($b, $body) = @_;
    return unless defined $b->case;
    my $c = $cases{ $b->case };
    my $got = eval { $json->decode($body) } // {};
    is $got->{usage}{input_tokens}, scalar @{ $c->{input_ids} },
       $b->name . ': input_tokens, the reference\'s ids';
    my ($worst, $qi) = (0, 0);
    for my $q (@{ $c->{questions} }) {
        my $ans = $got->{answers}{ $q->{id} } // {};
        my $ref = $c->{probabilities}[$qi++];
        my @opts = @{ $q->{option_ids} };
        my @p = ($ans->{type} // '') eq 'noul'
              ? ($ans->{noul}, 1 - ($ans->{noul} // 9))
              : map { $ans->{probabilities}{$_} } @opts;
        for my $i (0 .. $#opts) {
            my $d = abs(($p[$i] // 9) - $ref->[$i]);
            $worst = $d if $d > $worst;
        }
    }
    cmp_ok $worst, '<=', 1.01e-4,
           $b->name . ': probabilities within rounding of the reference'
        or diag $body;
});

run_tests();

__DATA__

=== TEST 1: an H.264 clip at 30 fps: every frame at or past each half second
--- case: omni_vid00_1v0i

=== TEST 2: a 4:4:4 clip of 161 x 97, scaled to 160 x 96 first
--- case: omni_vid03_1v0i

=== TEST 3: an odd count of kept frames, the last repeated
--- case: omni_vid04_1v0i

=== TEST 4: 640 x 480, above 256 x 32 x 32 pixels, beside two images
--- case: omni_vid06_1v2i

=== TEST 5: HEVC and AV1 (WebM) in one record
--- case: omni_vid07_2v0i

=== TEST 6: a clip with sound beside a silent one: sound off, answered
--- case: omni_vid08_2v0i

=== TEST 7: 5.5 s of Matroska with AAC beside a silent VP9 clip
--- case: omni_vid10_2v0i

=== TEST 8: one video with an AAC track: heard, its sound between its frames
--- case: omni_av00_1v0i0a

=== TEST 9: two videos with sound, an image and an audio clip: all heard
--- case: omni_av09_2v1i1a

=== TEST 10: media_kwargs beside videos: refused by name
--- refused: omni_vid13_1v0i

=== TEST 11: /v1/models: Clef Omni takes videos (and audio clips)
--- request
GET /v1/models
--- error_code: 200
--- response_body_like: "description":"Clef Omni decision model clef-omni: [^"]*; text, images \(PNG, JPEG, WebP\), audio \(WAV, FLAC, MP3, Ogg, M4A/AAC, WebM\) and videos with their sound \(MP4, Matroska, WebM\)".*"capabilities":\["systemone","images","videos","audio"\],"max_images":4,"max_videos":2,"max_audio":4\}
