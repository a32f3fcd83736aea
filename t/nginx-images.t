# Images through nginx (docs/design/media.md): requests of t/fixtures/vision on
# the checkpoint they were computed on get the reference's answers (the
# same bytes as `clef decide`, probabilities within rounding of
# transformers + ClefModel), and every refusal of an image reaches the
# client as docs/design/media.md shows it: from the worker (wire form, limits,
# headers) and from the engine (pixels that cannot be decoded).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClefTest;
use Test::Nginx::Socket 'no_plan';
use MIME::Base64 qw(encode_base64 decode_base64);

master_on();
repeat_each(2);

clef_defaults(model => ClefModels->vision_model_dir,
              engine => 'zone=clef:64m timeout=30s',
              http => "    client_max_body_size 13m;\n",
              locations => <<'LOC');
        location = /v1/systemone { clef_systemone; }
        location = /v1/models { clef_models; }
        location = /one/v1/systemone {
            clef_max_images 1;
            clef_systemone;
        }
LOC

my $root = $ClefModels::ROOT;
my $json = ClefModels->json;

sub file_b64 {
    my ($name) = @_;
    open my $fh, '<:raw', "$root/t/fixtures/images/corpus/$name" or die "$name: $!";
    local $/;
    return encode_base64(<$fh>, '');
}

sub data_url {
    my ($name) = @_;
    my ($ext) = $name =~ /\.(\w+)$/;
    $ext = 'jpeg' if $ext eq 'jpg';
    return "data:image/$ext;base64," . file_b64($name);
}

open my $fh, '<', "$root/t/fixtures/vision/cases.jsonl" or die $!;
my @cases = map { $json->decode($_) } <$fh>;
close $fh;

# The request of fixture case $i, its images read from the corpus.
sub case_request {
    my ($i) = @_;
    my %body = %{ $cases[$i]{body} };
    $body{images} = [ map { data_url(substr $_, 7) } @{ $body{images} } ];
    return "POST /v1/systemone\n" . $json->encode(\%body);
}

# A request with these images (JSON text), to $uri.
sub ask {
    my ($images, $uri) = @_;
    return 'POST ' . ($uri // '/v1/systemone') . "\n"
         . '{"model":"m","state":"s","questions":{"q":{"type":"noul"}},'
         . '"images":' . $images . '}';
}

our $png = file_b64('png_rgb_64x48.png');
our $jpg = file_b64('jpg_q90_444_200x150.jpg');

# --- case: I posts fixture case I and expects what clef decide answers
add_block_preprocessor(sub {
    my $b = shift;
    $b->set_value(more_headers => 'Content-Type: application/json');
    $b->set_value(timeout => 60);
    if (defined $b->case) {
        $b->set_value(request => case_request($b->case));
        $b->set_value(decide => 1);
    }
});

# --- case: I.  The answer also has the reference's token count, and every
# probability is within the 4-decimal rounding of the reference's (choice
# labels and score levels sort into the encoder's option order).
add_response_body_check(sub {
    my ($b, $body) = @_;
    return unless defined $b->case;
    my $c = $cases[$b->case];
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
           $b->name . ': probabilities within rounding of the reference';
});

run_tests();

__DATA__

=== TEST 1: fixture case 0: the answer of clef decide
--- case: 0

=== TEST 2: fixture case 1: the answer of clef decide
--- case: 1

=== TEST 3: fixture case 2: the answer of clef decide
--- case: 2

=== TEST 4: fixture case 3: the answer of clef decide
--- case: 3

=== TEST 5: fixture case 4: the answer of clef decide
--- case: 4

=== TEST 6: fixture case 5: the answer of clef decide
--- case: 5

=== TEST 7: /v1/models: the model takes up to 4 images
--- request
GET /v1/models
--- error_code: 200
--- response_body_like: "capabilities":\["systemone","images","videos"\],"max_images":4,"max_videos":2[,}]

=== TEST 8: remote URL
--- request eval
main::ask('["https://example.com/cat.png"]')
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"image_url_unsupported","message":"Image 0 is a remote URL: images are not fetched; send the image itself as a data URL (data:image/png;base64,...).","loc":["body","images",0]}}

=== TEST 9: GIF
--- request eval
main::ask('["data:image/gif;base64,R0lGODlhAQABAAAAACw="]')
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"image_type_unsupported","message":"Image 0 has type 'image/gif': only image/png, image/jpeg and image/webp are accepted.","loc":["body","images",0]}}

=== TEST 10: bad base64 in the second image
--- request eval
main::ask(qq{["data:image/png;base64,$main::png",{"content_type":"image/png","base64":"iVBO*w0K"}]})
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"image_base64_invalid","message":"Image 1 is not valid base64: a character outside the base64 alphabet at offset 4 of its data.","loc":["body","images",1]}}

=== TEST 11: a PNG declared a JPEG
--- request eval
main::ask(qq{["data:image/jpeg;base64,$main::png"]})
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"image_type_mismatch","message":"Image 0 is declared image/jpeg but its bytes are a PNG file.","loc":["body","images",0]}}

=== TEST 12: a 69-byte PNG that claims 100000 x 100000
--- request eval
main::ask('["data:image/png;base64,iVBORw0KGgoAAAANSUhEUgABhqAAAYagCAIAAAAnMJyfAAAADElEQVR4nGNgYGAAAAAEAAH2FzhVAAAAAElFTkSuQmCC"]')
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"image_too_many_pixels","message":"Image 0 is 100000x100000 (10000000000 pixels); the limit is 16777216 pixels.","loc":["body","images",0]}}

=== TEST 13: 201 x 1
--- request eval
main::ask('["data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAMkAAAABCAIAAAD7Hx2LAAAADElEQVR4nGNgYGAAAAAEAAH2FzhVAAAAAElFTkSuQmCC"]')
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"image_aspect_ratio","message":"Image 0 is 201x1: its aspect ratio 201.0 is over the processor's limit of 200.","loc":["body","images",0]}}

=== TEST 14: an object without base64
--- request eval
main::ask('[{"content_type":"image/png"}]')
--- error_code: 422
--- response_body chomp
{"detail":[{"type":"missing","loc":["body","images",0,"base64"],"msg":"Field required","input":{"content_type":"image/png"}}]}

=== TEST 15: five images
--- request eval
main::ask('[' . CORE::join(',', ('"data:image/png;base64,AA=="') x 5) . ']')
--- error_code: 400
--- response_body chomp
{"detail":"Too many images. Must have at most 4 images."}

=== TEST 16: two where clef_max_images is 1
--- request eval
main::ask(qq{["data:image/png;base64,$main::png","x"]}, "/one/v1/systemone")
--- error_code: 400
--- response_body chomp
{"detail":"Too many images. Must have at most 1 image."}

=== TEST 17: over 4 MiB of base64
--- request eval
main::ask('["data:image/png;base64,' . ('A' x (4 * 1048576 + 4)) . '"]')
--- error_code: 413
--- response_body chomp
{"detail":{"error_type":"image_too_large","message":"Image 0 is 4194308 bytes of base64; the limit is 4194304 bytes per image.","loc":["body","images",0]}}

=== TEST 18: over 8 MiB decoded in all
--- request eval
do { my $raw = MIME::Base64::decode_base64($main::png); my $pad = MIME::Base64::encode_base64($raw . ("\0" x (3 * 1048576 - length $raw)), ''); main::ask('[' . CORE::join(',', map { qq{"data:image/png;base64,$pad"} } 1 .. 3) . ']') }
--- error_code: 413
--- response_body chomp
{"detail":{"error_type":"images_too_large","message":"Images 0 to 2 decode to 9437184 bytes; the limit is 8388608 bytes for all images of a request.","loc":["body","images",2]}}

=== TEST 19: the engine refuses pixel data that does not decode
--- request eval
main::ask(qq{["data:image/png;base64,$main::png","data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAEAAAABACAIAAAAlC+aJAAAACElEQVR4nGNggAEAAEJcHV8="]})
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"image_invalid","message":"Image 1 cannot be decoded: PNG: the file is truncated.","loc":["body","images",1]}}

=== TEST 20: the engine refuses a truncated JPEG
--- request eval
do { my $cut = MIME::Base64::encode_base64(substr(MIME::Base64::decode_base64($main::jpg), 0, 700), ''); main::ask(qq{["data:image/jpeg;base64,$cut"]}) }
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"image_invalid","message":"Image 0 cannot be decoded: JPEG: the file is truncated.","loc":["body","images",0]}}

=== TEST 21: four 16 Mi pixel images: 65,544 image tokens cannot fit 65,536, refused as Workers AI does (413) before any pixel is decoded
--- request eval
main::ask('[' . CORE::join(',', map { '"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAEAAAABAACAIAAAB9wbNAAAAAAElFTkSuQmCC"' } 1 .. 4) . ']')
--- error_code: 413
--- response_body_like: ^\{"detail":\{"error_type":"max_tokens_exceeded","message":"Request needs more than \d+ tokens \(its 4 images alone are 65544\); the limit is 65536\."\}\}$

=== TEST 22: an image is answered
--- request eval
main::ask(qq{["data:image/png;base64,$main::png"]})
--- error_code: 200
--- response_body_like: ^\{"model":"clef-tiny","answers":\{"q":\{"type":"noul","noul":

=== TEST 23: audio beside images the model takes (issue 22), a model without an audio tower: refused by name
--- request eval
"POST /v1/systemone\n" . '{"model":"m","state":"s","questions":{"q":{"type":"noul"}},"images":'
. qq{["data:image/png;base64,$main::png"],"audio":["data:audio/wav;base64,AAAA"]\}}
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"audio_unsupported","message":"This model does not accept audio clips (1 given): remove \"audio\"; text, JSON states, images and videos are supported.","loc":["body","audio"]}}

=== TEST 24: media_kwargs beside images: an unknown key, refused by name
--- request eval
"POST /v1/systemone\n" . '{"model":"m","state":"s","questions":{"q":{"type":"noul"}},"images":'
. qq{["data:image/png;base64,$main::png"],"media_kwargs":\{"image_mean":[0,0,0]\}\}}
--- error_code: 400
--- response_body chomp
{"detail":{"error_type":"media_kwargs_unsupported","message":"The media_kwargs key \"image_mean\" is not supported: this server takes fps, size, min_pixels, max_pixels, cap_pixels_per_frame and max_video_tokens; remove it.","loc":["body","media_kwargs","image_mean"]}}
