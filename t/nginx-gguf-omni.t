# Clef Omni from GGUF behind nginx (docs/design/omni.md): the
# omni1 checkpoint as `clef mkmodel --gguf q4_k_m` writes it, served as
# `clef_model NAME FILE.gguf mmproj=FILE`, answers text as clef decide does
# on the same file and text and images with the reference's token count
# and its probabilities (t/fixtures/gguf/e2e-omni/omni1.q4_k_m.jsonl: the
# reference on the file's dequantized weights) within rounding; /v1/models
# says Clef Omni, Q4_K_M and q8 (the default on block-quantized weights:
# the exact checks here name precision=fp32); an audio clip is answered as
# clef decide answers it; precision=q8 answers images too.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClefTest;
use File::Path qw(make_path remove_tree);
use File::Temp qw(tempdir);
use Test::Nginx::Socket 'no_plan';
use MIME::Base64 qw(encode_base64);

master_on();
repeat_each(2);

my $root = $ClefModels::ROOT;
my $json = ClefModels->json;

# the files the reference ran on (their sha256 are test_gguf_omni's check)
my $dir = "$root/build/t/nginx-gguf-omni1";
unless (-f "$dir/mmproj.gguf") {
    make_path("$root/build/t");
    my $tmp = tempdir("nginx-gguf-omni1-XXXXXX", DIR => "$root/build/t");
    my $bin = ClefModels::clef_bin();
    my $out = `"$bin" mkmodel --config "$root/t/fixtures/models/omni1.json" --tokenizer "$root/t/fixtures/tokenizer/qwen3-omni" --seed 21 --gguf q4_k_m --out "$tmp/m.gguf" --mmproj "$tmp/mmproj.gguf" 2>&1`;
    die "clef mkmodel failed:\n$out" if $?;
    chmod 0755, $tmp;
    rename $tmp, $dir or -f "$dir/mmproj.gguf" or die "rename $tmp: $!";
    remove_tree($tmp) if -d $tmp;
}
$ENV{TEST_NGINX_OMNI_GGUF} = $dir;

clef_defaults(model => "$dir/m.gguf",
              name => 'clef-omni',
              model_opts => "mmproj=$dir/mmproj.gguf threads=1 precision=fp32",
              engine => 'zone=clef:64m timeout=30s',
              http => "    client_max_body_size 13m;\n",
              decide => { mmproj => "$dir/mmproj.gguf", precision => 'fp32' });

open my $fh, '<', "$root/t/fixtures/gguf/e2e-omni/omni1.q4_k_m.jsonl" or die $!;
my %cases = map { my $c = $json->decode($_); ($c->{name} => $c) } <$fh>;
close $fh;

# The body of t/fixtures/e2e/omni1_audio.jsonl's case wav-tone-16k, its
# clip inlined (the reference's input_tokens: 174, whatever the weights).
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
    for my $k (qw(case case_q8)) {
        next unless defined $b->$k;
        my $c = $cases{ $b->$k } or die "no fixture case " . $b->$k;
        $b->set_value(request => "POST /v1/systemone\n" . $c->{body});
    }
});

# The reference's token count, and every probability within the 4-decimal
# rounding of the reference's (fp32), or within q8's bound (5e-2).
add_response_body_check(sub {
    my ($b, $body) = @_;
    if (defined $b->input_tokens) {
        my $got = eval { $json->decode($body) } // {};
        is $got->{usage}{input_tokens}, $b->input_tokens,
           $b->name . ': input_tokens, the reference\'s';
    }
    my $name = $b->case // $b->case_q8;
    return unless defined $name;
    my $c = $cases{$name};
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
    cmp_ok $worst, '<=', defined $b->case ? 1.01e-4 : 5e-2,
           $b->name . ': probabilities within '
           . (defined $b->case ? 'rounding' : 'q8\'s bound')
           . ' of the reference';
});

run_tests();

__DATA__

=== TEST 1: text, three question types: the answer of clef decide on the file
--- case: mixed-three
--- decide

=== TEST 2: one image through the mmproj's tower and DeepStack mergers
--- case: image-png-upscaled
--- error_code: 200

=== TEST 3: three images, each with its own newline
--- case: image-three
--- error_code: 200

=== TEST 3a: a WAV clip through the mmproj's audio tower: the answer of clef decide on the file
--- request eval
main::tone_request()
--- decide
--- input_tokens: 174

=== TEST 4: /v1/models: Clef Omni, the file's type, images, videos and audio; q8 by default on its blocks
--- http_config
    clef_model clef-omni $TEST_NGINX_OMNI_GGUF/m.gguf mmproj=$TEST_NGINX_OMNI_GGUF/mmproj.gguf threads=1;
    clef_engine zone=clef:64m timeout=30s;
--- request
GET /v1/models
--- error_code: 200
--- response_body_like: "description":"Clef Omni decision model clef-omni: 4 layers, hidden size 64, Q4_K_M weights, cpu backend; text, images \(PNG, JPEG, WebP\), audio \(WAV, FLAC, MP3, Ogg, M4A/AAC, WebM\) and videos with their sound \(MP4, Matroska, WebM\)".*"weights":"Q4_K_M","weight_types":\[\{"type":"Q5_0","matrices":80,"bytes":6842704,"bytes_q8":6842704\},\{"type":"F16","matrices":66,"bytes":474400,"bytes_q8":474400\},\{"type":"F32","matrices":7,"bytes":205312,"bytes_q8":205312\},\{"type":"Q8_0","matrices":11,"bytes":45696,"bytes_q8":45696\},\{"type":"Q5_1","matrices":4,"bytes":24576,"bytes_q8":24576\}\],"precision":"q8","precision_default":true,"capabilities":\["systemone","images","videos","audio"\],"max_images":4,"max_videos":2,"max_audio":4\}

=== TEST 5: precision=q8: the experts read in place, an image answered
--- http_config
    clef_model clef-omni $TEST_NGINX_OMNI_GGUF/m.gguf mmproj=$TEST_NGINX_OMNI_GGUF/mmproj.gguf threads=1 precision=q8;
    clef_engine zone=clef:64m timeout=30s;
    client_max_body_size 13m;
--- case_q8: image-webp-and-palette
--- error_code: 200
