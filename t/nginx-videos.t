# Videos through nginx (docs/design/media.md, "Videos in requests"): requests of
# t/fixtures/vision/videos.jsonl on the checkpoint they were computed on
# get the reference's token count and probabilities (the same bytes as
# `clef decide`; transformers' Qwen3VLVideoProcessor + ClefModel), videos
# beside images and with media_kwargs; and every refusal of a video
# reaches the client as JSON naming the video (index) and the reason:
# from the worker (wire form, container header, limits, media_kwargs) and
# from the engine's decode process (one frame, undecodable data).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClefTest;
use Test::Nginx::Socket 'no_plan';
use MIME::Base64 qw(encode_base64);
use JSON::PP;

master_on();
repeat_each(1);

clef_defaults(model => ClefModels->vision_model_dir,
              engine => 'zone=clef:64m timeout=60s',
              http => "    client_max_body_size 13m;\n",
              locations => <<'LOC');
        location = /v1/systemone { clef_systemone; }
        location = /v1/models { clef_models; }
        location = /one/v1/systemone {
            clef_max_videos 1;
            clef_systemone;
        }
LOC

my $root = $ClefModels::ROOT;
my $json = ClefModels->json;
my %types = (mp4 => 'video/mp4', mov => 'video/quicktime',
             mkv => 'video/x-matroska', webm => 'video/webm',
             avi => 'video/mp4', png => 'image/png', jpg => 'image/jpeg',
             webp => 'image/webp');

sub file_b64 {
    my ($path) = @_;
    open my $fh, '<:raw', "$root/t/fixtures/$path" or die "$path: $!";
    local $/;
    return encode_base64(<$fh>, '');
}

# "clip:NAME" or "corpus:NAME" as a data URL ($type: another declared type)
sub data_url {
    my ($ref, $type) = @_;
    my ($where, $name) = split /:/, $ref, 2;
    my ($ext) = $name =~ /\.(\w+)$/;
    my $dir = $where eq 'clip' ? 'video/clips' : 'images/corpus';
    return 'data:' . ($type // $types{$ext}) . ';base64,'
         . file_b64("$dir/$name");
}

# Each case, and its body's text as the fixture has it: a question
# object's key order is the prompt's (a Perl hash would reorder it).
open my $fh, '<', "$root/t/fixtures/vision/videos.jsonl" or die $!;
my (%cases, %bodies);
for my $line (<$fh>) {
    my $c = $json->decode($line);
    $cases{ $c->{name} } = $c;
    my $at = index($line, '"body": ') + 8;
    my (undef, $n) = JSON::PP->new->decode_prefix(substr $line, $at);
    $bodies{ $c->{name} } = substr $line, $at, $n;
}
close $fh;

# The request of fixture case $name, its media read from the clips.
sub case_request {
    my ($name) = @_;
    (my $body = $bodies{$name}) =~ s/"((?:clip|corpus):[^"]+)"/'"' . data_url($1) . '"'/ge;
    return "POST /v1/systemone\n" . $body;
}

# A request with these videos (clip names, or [name, declared type]) and
# extra members (JSON text), to $uri.
sub ask {
    my ($videos, $extra, $uri) = @_;
    my @urls = map { ref $_ ? data_url("clip:$_->[0]", $_->[1])
                            : data_url("clip:$_") } @$videos;
    return 'POST ' . ($uri // '/v1/systemone') . "\n"
         . '{"model":"m","state":"s","questions":{"q":{"type":"noul"}},'
         . '"videos":' . $json->encode(\@urls) . ($extra // '') . '}';
}

# --- case: NAME posts fixture case NAME and expects what clef decide answers
add_block_preprocessor(sub {
    my $b = shift;
    $b->set_value(more_headers => 'Content-Type: application/json');
    $b->set_value(timeout => 120);
    if (defined $b->case) {
        $b->set_value(request => case_request($b->case));
        $b->set_value(decide => 1);
    }
});

# --- case: NAME.  The answer also has the reference's token count, and
# every probability is within the 4-decimal rounding of the reference's.
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
        my @p = ($ans->{type} // '') eq 'noul'
              ? ($ans->{noul})
              : map { $ans->{probabilities}{$_} }
                sort keys %{ $ans->{probabilities} // {} };
        for my $i (0 .. $#p) {
            my $d = abs(($p[$i] // 9) - $ref->[$i]);
            $worst = $d if $d > $worst;
        }
    }
    cmp_ok $worst, '<=', 5.1e-5,
           $b->name . ': probabilities within rounding of the reference'
        or diag $body;
});

run_tests();

__DATA__

=== TEST 1: an H.264 clip: the answer of clef decide, the reference's tokens
--- case: vid00_1v0i

=== TEST 2: two videos (QuickTime H.264, WebM VP8)
--- case: vid04_2v0i

=== TEST 3: a rotated clip and a QuickTime one
--- case: vid08_2v0i

=== TEST 4: HEVC 10 bit in Matroska
--- case: vid17_1v0i

=== TEST 5: a video beside two images
--- case: vid26_1v2i

=== TEST 6: media_kwargs fps 1
--- case: vid28_1v0i_kw

=== TEST 7: media_kwargs with the per-frame cap
--- case: vid35_1v0i_kw

=== TEST 8: /v1/models: the model takes images and up to 2 videos
--- request
GET /v1/models
--- error_code: 200
--- response_body_like: "capabilities":\["systemone","images","videos"\],"max_images":4,"max_videos":2[,}]

=== TEST 9: sound only: no video stream
--- request eval
main::ask(['h264_160x120_30fps.mp4', 'audio_only.mp4'])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"video_no_stream","message":"Video 1 has no video stream (its header lists no video track).","loc":["body","videos",1]}}

=== TEST 10: one frame only (the engine's decode)
--- request eval
main::ask(['h264_160x120_30fps.mp4', 'one_frame.mp4'])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"video_one_frame","message":"Video 1 (160x120, 1 frame) has one frame only: a video needs two to make a temporal patch.","loc":["body","videos",1]}}

=== TEST 11: a faststart file cut in its data: undecodable
--- request eval
main::ask(['truncated_faststart.mp4'])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"video_invalid","message":"Video 0 cannot be decoded (decoding a packet: Invalid data found when processing input; the file may be truncated or damaged).","loc":["body","videos",0]}}

=== TEST 12: a file cut before its moov box
--- request eval
main::ask(['frames_2.mp4', 'truncated_moov_end.mp4'])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"video_invalid","message":"Video 1 cannot be read: it has no moov box (the file is truncated, or its index was never written).","loc":["body","videos",1]}}

=== TEST 13: random bytes
--- request eval
main::ask(['garbage.mp4'])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"video_invalid","message":"Video 0 is not an MP4, QuickTime, WebM or Matroska file (its first bytes are none of their signatures).","loc":["body","videos",0]}}

=== TEST 14: a header that claims two hours: too long
--- request eval
main::ask(['hours_header.mp4'])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"video_too_long","message":"Video 0 lasts 7200.0 s; the limit is 600 s.","loc":["body","videos",0]}}

=== TEST 15: a header that claims 65535 x 65535
--- request eval
main::ask(['gigapixel_header.mp4'])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"video_too_many_pixels","message":"Video 0 has frames of 65535x65535 pixels; the limit is 16777216 pixels a frame.","loc":["body","videos",0]}}

=== TEST 16: MPEG-4 part 2: a codec outside the allow-list
--- request eval
main::ask(['mpeg4_part2.mp4'])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"video_codec_unsupported","message":"Video 0 is in mp4v; this server decodes H.264, HEVC, VP8, VP9 and AV1.","loc":["body","videos",0]}}

=== TEST 17: a WebM declared MP4
--- request eval
main::ask([['vp8_176x144_24fps.webm', 'video/mp4']])
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"video_type_mismatch","message":"Video 0 is declared video/mp4 but its bytes are a WebM or Matroska file.","loc":["body","videos",0]}}

=== TEST 18: three videos: too many
--- request eval
main::ask(['frames_2.mp4', 'frames_2.mp4', 'frames_2.mp4'])
--- error_code: 400
--- response_body chomp
{"detail":"Too many videos. Must have at most 2 videos."}

=== TEST 19: two where clef_max_videos is 1
--- request eval
main::ask(['frames_2.mp4', 'frames_2.mp4'], '', '/one/v1/systemone')
--- error_code: 400
--- response_body chomp
{"detail":"Too many videos. Must have at most 1 video."}

=== TEST 20: media_kwargs: an unknown key, named
--- request eval
main::ask(['frames_2.mp4'], ',"media_kwargs":{"fps":2,"do_resize":false}')
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"media_kwargs_unsupported","message":"The media_kwargs key \"do_resize\" is not supported: this server takes fps, size, min_pixels, max_pixels, cap_pixels_per_frame and max_video_tokens; remove it.","loc":["body","media_kwargs","do_resize"]}}

=== TEST 21: media_kwargs: num_frames, which the reference refuses beside fps
--- request eval
main::ask(['frames_2.mp4'], ',"media_kwargs":{"num_frames":8}')
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"media_kwargs_unsupported","message":"The media_kwargs key \"num_frames\" is not supported: the reference's video processor refuses it beside its fps, which is always set; send fps instead.","loc":["body","media_kwargs","num_frames"]}}

=== TEST 22: media_kwargs: fps out of bounds
--- request eval
main::ask(['frames_2.mp4'], ',"media_kwargs":{"fps":500}')
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"media_kwargs_invalid","message":"The media_kwargs key \"fps\" must be a number above 0 and at most 120.","loc":["body","media_kwargs","fps"]}}

=== TEST 23: a type outside the four
--- request eval
"POST /v1/systemone\n" . '{"model":"m","state":"s","questions":{"q":{"type":"noul"}},"videos":["data:video/x-msvideo;base64,AAAA"]}'
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"video_type_unsupported","message":"Video 0 has type 'video/x-msvideo': only video/mp4, video/webm, video/quicktime and video/x-matroska are accepted.","loc":["body","videos",0]}}
