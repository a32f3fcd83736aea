# Images through nginx (README "Images"): requests of t/fixtures/vision on
# the checkpoint they were computed on get the reference's answers (the
# same bytes as `clef decide`, probabilities within rounding of
# transformers + ClefModel), and every refusal of an image reaches the
# client as the JSON the README shows: from the worker (wire form, limits,
# headers) and from the engine (pixels that cannot be decoded).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use MIME::Base64 qw(encode_base64);
use Test::More;
use ClefNginx;

my $root = "$FindBin::Bin/..";
my $srv = ClefNginx->new(
    model => ClefNginx->vision_model_dir,
    engine => 'zone=clef:64m timeout=30s',
    http_config => "    client_max_body_size 13m;\n",
    server_config => <<'LOC');
        location = /one/v1/systemone {
            clef_max_images 1;
            clef_systemone;
        }
LOC
$srv->start_ready;
my $json = ClefNginx->json;

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

# ---- answers ---------------------------------------------------------------

open my $fh, '<', "$root/t/fixtures/vision/cases.jsonl" or die $!;
my @cases = map { $json->decode($_) } <$fh>;
close $fh;
for my $c (@cases[0 .. 5]) {
    my %body = %{ $c->{body} };
    $body{images} = [ map { data_url(substr $_, 7) } @{ $body{images} } ];
    my $r = $srv->post_json(\%body, undef, 60);
    is $r->{status}, 200, "$c->{name}: 200" or diag $r->{content};
    is_deeply $r->{json}, $srv->decide(\%body), "$c->{name}: the answer of clef decide";
    is $r->{json}{usage}{input_tokens}, scalar @{ $c->{input_ids} },
       "$c->{name}: input_tokens, the reference's ids";
    # every probability within the 4-decimal rounding of the reference's
    # (choice labels and score levels sort into the encoder's option order)
    my ($worst, $qi) = (0, 0);
    for my $q (@{ $c->{questions} }) {
        my $ans = $r->{json}{answers}{ $q->{id} } // {};
        my $ref = $c->{probabilities}[$qi++];
        my @p = ($ans->{type} // '') eq 'noul'
              ? ($ans->{noul})
              : map { $ans->{probabilities}{$_} } sort keys %{ $ans->{probabilities} // {} };
        for my $i (0 .. $#p) {
            my $d = abs(($p[$i] // 9) - $ref->[$i]);
            $worst = $d if $d > $worst;
        }
    }
    cmp_ok $worst, '<=', 5.1e-5, "$c->{name}: probabilities within rounding of the reference";
}

my $models = $srv->request('GET', '/v1/models');
is_deeply $models->{json}{models}[0]{capabilities}, [ 'systemone', 'images' ],
    '/v1/models: the model takes images';
is $models->{json}{models}[0]{max_images}, 4, '/v1/models: up to 4';

# ---- refusals --------------------------------------------------------------

my $png = file_b64('png_rgb_64x48.png');
sub ask {
    my ($images, $uri) = @_;
    my $body = '{"model":"m","state":"s","questions":{"q":{"type":"noul"}},'
             . '"images":' . $images . '}';
    return $srv->request('POST', $uri // '/v1/systemone', $body,
                         { 'Content-Type' => 'application/json' }, 60);
}
sub refused {
    my ($name, $images, $status, $want, $uri) = @_;
    my $r = ask($images, $uri);
    is $r->{status}, $status, "$name: $status" or diag $r->{content};
    is $r->{content}, $want, "$name: the body";
}

refused('remote URL', '["https://example.com/cat.png"]', 400,
    '{"detail":{"error_type":"image_url_unsupported","message":"Image 0 is a '
    . 'remote URL: images are not fetched; send the image itself as a data URL '
    . '(data:image/png;base64,...).","loc":["body","images",0]}}');
refused('GIF', '["data:image/gif;base64,R0lGODlhAQABAAAAACw="]', 400,
    '{"detail":{"error_type":"image_type_unsupported","message":"Image 0 has '
    . 'type \'image/gif\': only image/png, image/jpeg and image/webp are '
    . 'accepted.","loc":["body","images",0]}}');
refused('bad base64 in the second image',
    qq{["data:image/png;base64,$png",{"content_type":"image/png","base64":"iVBO*w0K"}]},
    400, '{"detail":{"error_type":"image_base64_invalid","message":"Image 1 is '
    . 'not valid base64: a character outside the base64 alphabet at offset 4 of '
    . 'its data.","loc":["body","images",1]}}');
refused('a PNG declared a JPEG', qq{["data:image/jpeg;base64,$png"]}, 400,
    '{"detail":{"error_type":"image_type_mismatch","message":"Image 0 is '
    . 'declared image/jpeg but its bytes are a PNG file.","loc":["body","images",0]}}');
refused('a 69-byte PNG that claims 100000 x 100000',
    '["data:image/png;base64,iVBORw0KGgoAAAANSUhEUgABhqAAAYagCAIAAAAnMJyfAAAADElEQVR4nGNgYGAAAAAEAAH2FzhVAAAAAElFTkSuQmCC"]',
    400, '{"detail":{"error_type":"image_too_many_pixels","message":"Image 0 is '
    . '100000x100000 (10000000000 pixels); the limit is 16777216 pixels.",'
    . '"loc":["body","images",0]}}');
refused('201 x 1', '["data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAMkAAAABCAIAAAD7Hx2LAAAADElEQVR4nGNgYGAAAAAEAAH2FzhVAAAAAElFTkSuQmCC"]',
    400, '{"detail":{"error_type":"image_aspect_ratio","message":"Image 0 is '
    . '201x1: its aspect ratio 201.0 is over the processor\'s limit of 200.",'
    . '"loc":["body","images",0]}}');
refused('an object without base64', '[{"content_type":"image/png"}]', 422,
    '{"detail":[{"type":"missing","loc":["body","images",0,"base64"],"msg":'
    . '"Field required","input":{"content_type":"image/png"}}]}');
refused('five images', '[' . join(',', ('"data:image/png;base64,AA=="') x 5) . ']',
    400, '{"detail":"Too many images. Must have at most 4 images."}');
refused('two where clef_max_images is 1', qq{["data:image/png;base64,$png","x"]},
    400, '{"detail":"Too many images. Must have at most 1 image."}',
    '/one/v1/systemone');
refused('over 4 MiB of base64', '["data:image/png;base64,' . ('A' x (4 * 1048576 + 4)) . '"]',
    413, '{"detail":{"error_type":"image_too_large","message":"Image 0 is '
    . '4194308 bytes of base64; the limit is 4194304 bytes per image.",'
    . '"loc":["body","images",0]}}');
my $raw = MIME::Base64::decode_base64($png);
my $pad = encode_base64($raw . ("\0" x (3 * 1048576 - length $raw)), '');
refused('over 8 MiB decoded in all',
    '[' . join(',', map { qq{"data:image/png;base64,$pad"} } 1 .. 3) . ']', 413,
    '{"detail":{"error_type":"images_too_large","message":"Images 0 to 2 decode '
    . 'to 9437184 bytes; the limit is 8388608 bytes for all images of a request.",'
    . '"loc":["body","images",2]}}');

# four 4096 x 4096 headers: 65,544 image tokens cannot fit 65,536, refused
# as Workers AI does (413) before any pixel is decoded
my $huge = 'iVBORw0KGgoAAAANSUhEUgAAEAAAABAACAIAAAB9wbNAAAAAAElFTkSuQmCC';
my $r413 = ask('[' . join(',', map { qq{"data:image/png;base64,$huge"} } 1 .. 4) . ']');
is $r413->{status}, 413, 'four 16 Mi pixel images: 413';
like $r413->{content}, qr/^\{"detail":\{"error_type":"max_tokens_exceeded","message":"Request needs more than \d+ tokens \(its 4 images alone are 65544\); the limit is 65536\."\}\}$/,
    'four 16 Mi pixel images: the images\' tokens named';

# the engine's refusal: a header that reads, pixels that do not
my $broken = 'iVBORw0KGgoAAAANSUhEUgAAAEAAAABACAIAAAAlC+aJAAAACElEQVR4nGNggAEAAEJcHV8=';
refused('pixel data that does not decode', qq{["data:image/png;base64,$png","data:image/png;base64,$broken"]},
    400, '{"detail":{"error_type":"image_invalid","message":"Image 1 cannot be '
    . 'decoded: PNG: the file is truncated.","loc":["body","images",1]}}');
my $jpg = file_b64('jpg_q90_444_200x150.jpg');
my $cut = encode_base64(substr(MIME::Base64::decode_base64($jpg), 0, 700), '');
refused('a truncated JPEG', qq{["data:image/jpeg;base64,$cut"]}, 400,
    '{"detail":{"error_type":"image_invalid","message":"Image 0 cannot be '
    . 'decoded: JPEG: the file is truncated.","loc":["body","images",0]}}');

# media not served yet beside images the model takes (issues 21, 22):
# refused by name, never answered as if absent
sub refused_body {
    my ($name, $body, $status, $want) = @_;
    my $r = $srv->request('POST', '/v1/systemone', $body,
                          { 'Content-Type' => 'application/json' }, 60);
    is $r->{status}, $status, "$name: $status" or diag $r->{content};
    is $r->{content}, $want, "$name: the body";
}
refused_body('a video beside an image',
    '{"model":"m","state":"s","questions":{"q":{"type":"noul"}},"images":'
    . qq{["data:image/png;base64,$png"],"videos":["data:video/mp4;base64,AAAA"]\}},
    400, '{"detail":{"error_type":"videos_unsupported","message":"This server '
    . 'does not take videos yet (1 given): remove \"videos\"; text, JSON states '
    . 'and images are supported.","loc":["body","videos"]}}');
refused_body('media_kwargs beside an image',
    '{"model":"m","state":"s","questions":{"q":{"type":"noul"}},"images":'
    . qq{["data:image/png;base64,$png"],"media_kwargs":\{"min_pixels":1024\}\}},
    400, '{"detail":{"error_type":"media_kwargs_unsupported","message":"The '
    . 'media_kwargs key \"min_pixels\" is not supported: this server passes no '
    . 'arguments to its media processors; remove it.","loc":["body",'
    . '"media_kwargs","min_pixels"]}}');

# still serving, and no crash in the logs
my $ok = ask(qq{["data:image/png;base64,$png"]});
is $ok->{status}, 200, 'after the refusals: an image is answered';
is_deeply [ $srv->bad_log_lines ], [], 'no alert, crash or leak in the error log';

done_testing;
