# Clef Omni's audio clips through nginx (docs/design/omni.md): requests of
# t/fixtures/e2e/omni1_audio.jsonl (t/reference/gen_omni_e2e_fixtures.py:
# Cloudflare's Omni joint_schema_model.py run from the raw bodies) on the
# checkpoint they were computed on get what `clef decide` answers (the
# same JSON), the reference's input_tokens and its probabilities within
# the request's bound: the answer's 4-decimal rounding, plus the 1e-5 the
# model meets on the reference's own features, plus the measured effect
# of moving every feature 1e-4 (step_effect; test_audio holds our
# features within 1e-4 of the reference's).  Clips in WAV, FLAC, MP3,
# Ogg/Opus, Ogg/Vorbis and M4A/AAC, as data URLs and as {content_type,
# base64} objects, beside images and silent videos.  And the refusals,
# as JSON naming the clip: too many clips (clef_max_audio), undecodable
# (the worker's signature check and the engine's decode process), a type
# that is not audio or not the bytes' family, too long (from a WAV
# header, and measured by the decoder), and audio on a model without an
# audio tower; a video's damaged track, beside a silent video too, and
# tracks too short, naming the video.
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
              http => "    client_max_body_size 13m;\n",
              locations => <<'LOC');
        location = /v1/systemone { clef_systemone; }
        location = /v1/models { clef_models; }
        location = /two/v1/systemone {
            clef_max_audio 2;
            clef_systemone;
        }
LOC

my $root = $ClefModels::ROOT;
my $json = ClefModels->json;
my %types = (wav => 'audio/wav', flac => 'audio/flac', mp3 => 'audio/mpeg',
             ogg => 'audio/ogg', opus => 'audio/ogg', m4a => 'audio/mp4',
             mka => 'audio/webm', weba => 'audio/webm',
             mov => 'video/quicktime',
             mp4 => 'video/mp4', mkv => 'video/x-matroska',
             webm => 'video/webm', png => 'image/png', jpg => 'image/jpeg',
             webp => 'image/webp');
my %dirs = (audio => 'audio/clips', clip => 'video/clips',
            corpus => 'images/corpus');

sub file_bytes {
    my ($path) = @_;
    open my $fh, '<:raw', "$root/t/fixtures/$path" or die "$path: $!";
    local $/;
    return <$fh>;
}

# "audio:NAME", "clip:NAME" or "corpus:NAME" as a data URL, or as a
# {content_type, base64} object ($object)
sub media_json {
    my ($ref, $object) = @_;
    my ($where, $name) = split /:/, $ref, 2;
    my ($ext) = $name =~ /\.(\w+)$/;
    my $b64 = encode_base64(file_bytes("$dirs{$where}/$name"), '');
    return $object
        ? qq{{"content_type":"$types{$ext}","base64":"$b64"}}
        : qq{"data:$types{$ext};base64,$b64"};
}

# Each case, and its body's text as the fixture has it (a question
# object's key order is the prompt's).
open my $fh, '<', "$root/t/fixtures/e2e/omni1_audio.jsonl" or die $!;
my (%cases, %bodies);
for my $line (<$fh>) {
    my $c = $json->decode($line);
    $cases{ $c->{name} } = $c;
    my $at = index($line, '"body": ') + 8;
    my (undef, $n) = JSON::PP->new->decode_prefix(substr $line, $at);
    $bodies{ $c->{name} } = substr $line, $at, $n;
}
close $fh;

# The case's body with its files inlined; $object: audio clips as
# {content_type, base64} objects.
sub case_request {
    my ($name, $object) = @_;
    $cases{$name} or die "no fixture case $name";
    (my $body = $bodies{$name})
        =~ s/"((audio|clip|corpus):[^"]+)"/media_json($1, $object && $2 eq 'audio')/ge;
    return "POST /v1/systemone\n" . $body;
}

# A request with these audio items (JSON texts) to $uri.
sub ask {
    my ($items, $uri) = @_;
    return 'POST ' . ($uri // '/v1/systemone') . "\n"
         . '{"model":"m","state":"s","questions":{"q":{"type":"noul"}},'
         . '"audio":[' . join(',', @$items) . ']}';
}

sub clip { media_json("audio:$_[0]") }

# A request with these videos (t/fixtures/video/clips) and no clip.
sub ask_videos {
    my ($names) = @_;
    return "POST /v1/systemone\n"
         . '{"model":"m","state":"s","questions":{"q":{"type":"noul"}},'
         . '"videos":[' . join(',', map { media_json("clip:$_") } @$names)
         . ']}';
}

sub b64_url {
    my ($type, $bytes) = @_;
    return qq{"data:$type;base64,} . encode_base64($bytes, '') . '"';
}

# 700 s of 8-bit mono at 100 Hz: a WAV whose header states its length
sub wav_700s {
    my $n = 70000;
    return 'RIFF' . pack('V', 36 + $n) . 'WAVEfmt '
         . pack('VvvVVvv', 16, 1, 1, 100, 100, 1, 8)
         . 'data' . pack('V', $n) . ("\x80" x $n);
}

# long12s.mp3 and 50 more copies of its frames (its ID3 tag once): 624 s,
# which only decoding measures
sub mp3_624s {
    my $d = file_bytes('audio/clips/long12s.mp3');
    return $d . (substr($d, 20) x 50);
}

# --- case: NAME posts fixture case NAME and expects what clef decide
# answers (--- objects: its clips as objects); --- dense: the block's
# nginx serves dense Clef (a vision tower, no audio tower)
add_block_preprocessor(sub {
    my $b = shift;
    $b->set_value(more_headers => 'Content-Type: application/json');
    $b->set_value(timeout => 120);
    if (defined $b->case) {
        $b->set_value(request => case_request($b->case, defined $b->objects));
        $b->set_value(decide => 1);
    }
    if (defined $b->dense) {
        $b->set_value(http_config => clef_http_config(
            model => ClefModels->model_dir(1), name => 'clef-tiny'));
    }
});

# The reference's input_tokens, its argmax, and every probability within
# the request's bound (options in the encoder's order).
add_response_body_check(sub {
    my ($b, $body) = @_;
    return unless defined $b->case;
    my $c = $cases{ $b->case };
    my $got = eval { $json->decode($body) } // {};
    is $got->{usage}{input_tokens}, $c->{input_tokens},
       $b->name . ': input_tokens, the reference\'s';
    my $bound = 5.1e-5 + 1e-5 + $c->{step_effect};
    my ($worst, $argmax) = (0, 1);
    for my $q (@{ $c->{questions} }) {
        my $ans = $got->{answers}{ $q->{id} } // {};
        my @opts = @{ $q->{options} };
        my @p = ($ans->{type} // '') eq 'noul'
              ? ($ans->{noul}, 1 - ($ans->{noul} // 9))
              : map { $ans->{probabilities}{$_} } @opts;
        my ($best, $rbest) = (0, 0);
        for my $i (0 .. $#opts) {
            my $d = abs(($p[$i] // 9) - $q->{probabilities}[$i]);
            $worst = $d if $d > $worst;
            $best = $i if ($p[$i] // -1) > ($p[$best] // -1);
            $rbest = $i if $q->{probabilities}[$i] > $q->{probabilities}[$rbest];
        }
        $argmax &&= $best == $rbest;
    }
    ok $argmax, $b->name . ': the reference\'s argmax';
    cmp_ok $worst, '<=', $bound,
           $b->name . sprintf(': probabilities within %.3g of the reference',
                              $bound)
        or diag $body;
});

run_tests();

__DATA__

=== TEST 1: one WAV clip, 16 kHz mono
--- case: wav-tone-16k

=== TEST 2: FLAC, 5.1 at 48 kHz (the resampler's downmix)
--- case: flac-tone-5.1-48k

=== TEST 3: MP3, 12 seconds (two audio windows)
--- case: mp3-twelve-seconds

=== TEST 4: Ogg/Opus, stereo
--- case: opus-speech-stereo

=== TEST 5: Ogg/Vorbis at 22.05 kHz
--- case: vorbis-chirp-22k

=== TEST 6: M4A/AAC, 5.1
--- case: m4a-tone-5.1

=== TEST 7: four clips, four containers, padded together
--- case: four-containers

=== TEST 8: the same four as {content_type, base64} objects
--- case: four-containers
--- objects

=== TEST 9: two images, then two clips
--- case: two-images-two-clips

=== TEST 10: an image, a clip and a silent video (images, audio, videos)
--- case: image-flac-video

=== TEST 11: a clip, a video with sound and a silent one: sound off, answered
--- case: clip-sounding-and-silent-video

=== TEST 12: silence
--- case: wav-silence

=== TEST 13: five clips: more than clef_max_audio's default 4
--- request eval
main::ask([ (main::clip('short16k.wav')) x 5 ])
--- error_code: 400
--- response_body chomp
{"detail":"Too many audio clips. Must have at most 4 audio clips."}

=== TEST 14: three clips where clef_max_audio is 2
--- request eval
main::ask([ (main::clip('short16k.wav')) x 3 ], '/two/v1/systemone')
--- error_code: 400
--- response_body chomp
{"detail":"Too many audio clips. Must have at most 2 audio clips."}

=== TEST 15: two clips where clef_max_audio is 2: answered
--- request eval
main::ask([ main::clip('short16k.wav'), main::clip('noise8k_aac.m4a') ], '/two/v1/systemone')
--- error_code: 200
--- response_body_like: "usage":\{"input_tokens":\d+

=== TEST 16: random bytes: none of the families' signatures (the worker)
--- request eval
main::ask([ main::clip('tone16k.wav'), main::clip('garbage.mp3') ])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"audio_invalid","message":"Audio clip 1 is not a WAV, FLAC, MP3, Ogg, MP4/M4A, AAC or WebM file (its first bytes are none of their signatures).","loc":["body","audio",1]}}

=== TEST 17: a WAV header with no data: undecodable (the decode process)
--- request eval
main::ask([ main::clip('tone16k.wav'), main::clip('truncated.wav') ])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"audio_invalid","message":"Audio clip 1 is not a WAV, FLAC, MP3, Ogg, MP4/M4A, AAC or WebM file.","loc":["body","audio",1]}}

=== TEST 18: an M4A with no audio stream
--- request eval
main::ask([ main::clip('video_only.m4a') ])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"audio_no_stream","message":"Audio clip 0 has no audio stream.","loc":["body","audio",0]}}

=== TEST 19: a clip declared image/png
--- request eval
main::ask([ main::b64_url('image/png', main::file_bytes('audio/clips/tone16k.wav')) ])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"audio_type_unsupported","message":"Audio clip 0 has type 'image/png': only audio/wav, audio/flac, audio/mpeg, audio/ogg, audio/mp4, audio/aac and audio/webm are accepted.","loc":["body","audio",0]}}

=== TEST 20: FLAC bytes declared audio/wav
--- request eval
main::ask([ main::b64_url('audio/wav', main::file_bytes('audio/clips/speech22k.flac')) ])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"audio_type_mismatch","message":"Audio clip 0 is declared audio/wav but its bytes are a FLAC file.","loc":["body","audio",0]}}

=== TEST 21: a WAV whose header states 700 s: too long, refused before decoding
--- request eval
main::ask([ main::b64_url('audio/wav', main::wav_700s()) ])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"audio_too_long","message":"Audio clip 0 lasts 700.0 s; the limit is 600 s.","loc":["body","audio",0]}}

=== TEST 22: an MP3 of 624 s: too long, as the decode process measures it
--- request eval
main::ask([ main::clip('tone16k.wav'), main::b64_url('audio/mpeg', main::mp3_624s()) ])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"audio_too_long","message":"Audio clip 1 lasts more than 600 s; the limit is 600 s.","loc":["body","audio",1]}}

=== TEST 23: audio on dense Clef (no audio tower): refused by name
--- dense
--- request eval
main::ask([ main::clip('tone16k.wav') ])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"audio_unsupported","message":"This model does not accept audio clips (1 given): remove \"audio\"; text, JSON states, images and videos are supported.","loc":["body","audio"]}}

=== TEST 24: /v1/models: Clef Omni takes up to 4 audio clips
--- request
GET /v1/models
--- error_code: 200
--- response_body_like: "description":"Clef Omni decision model clef-omni: [^"]*; text, images \(PNG, JPEG, WebP\), audio \(WAV, FLAC, MP3, Ogg, M4A/AAC, WebM\) and videos with their sound \(MP4, Matroska, WebM\)".*"capabilities":\["systemone","images","videos","audio"\].*"max_audio":4[,}]

=== TEST 25: ALAC, 7.1 AAC and AC-3 (Matroska) clips
--- case: alac-aac-7.1-ac3

=== TEST 26: a video whose audio stream has no packet: sound off, answered
--- case: zero-packet-track

=== TEST 27: a damaged track beside a silent video: refused naming it, as the reference raises
--- request eval
main::ask_videos(['h264_160x120_30fps.mp4', 'omni_v_corrupt_aac.mp4'])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"audio_invalid","message":"Video 1's sound cannot be decoded (decoding a packet: Invalid data found when processing input; the file may be truncated or damaged).","loc":["body","videos",1]}}

=== TEST 28: a 10 ms track and no clip: too short for the STFT, naming the video
--- request eval
main::ask_videos(['omni_v_track_10ms.mov'])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"audio_too_short","message":"The videos' audio tracks of this request are too short: the longest has 160 samples at 16000 Hz (10.0 ms); the least is 201 samples (12.6 ms).","loc":["body","videos",0]}}
