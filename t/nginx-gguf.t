# GGUF models behind nginx (docs/design/gguf.md): llama.cpp's Q4_K_M file of the
# gg1 checkpoint served as `clef_model NAME FILE.gguf` answers as clef
# decide does on the same file, its F16 file with the mmproj takes images,
# and /v1/models says how the weights are stored and the precision they
# are multiplied in (by default q8 on a block-quantized file, fp32 on a
# float one); the same file split by `clef gguf-split` as
# llama-gguf-split cuts it, served from its first part, answers as the
# unsplit file.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClefTest;
use File::Temp ();
use Test::Nginx::Socket 'no_plan';

master_on();
repeat_each(2);

$ENV{TEST_NGINX_CLEF_GGUF} = "$FindBin::Bin/fixtures/gguf";

# the Q4_K_M file in 3 parts (40, 40 and 12 tensors)
my $split = File::Temp::tempdir('clef-gguf-split-XXXXXX', TMPDIR => 1,
                                CLEANUP => 1);
chmod 0755, $split;
my $out = `'${\ ClefModels::clef_bin()}' gguf-split --split-max-tensors 40 '$ENV{TEST_NGINX_CLEF_GGUF}/gg1.q4_k_m.gguf' '$split/gg1' 2>&1`;
die "clef gguf-split failed:\n$out" if $?;
$ENV{TEST_NGINX_CLEF_SPLIT} = "$split/gg1-00001-of-00003.gguf";
clef_defaults(model => "$ENV{TEST_NGINX_CLEF_GGUF}/gg1.q4_k_m.gguf");

run_tests();

__DATA__

=== TEST 1: a Q4_K_M file answers as clef decide on it
--- request
POST /v1/systemone
{"model":"m","state":"Help! My payouts have been failing for 3 days.","questions":{"is_urgent":{"type":"noul","instructions":"Does this convey urgency?"},"about_money":{"type":"noul","instructions":"Is this about money?"}}}
--- more_headers
Content-Type: application/json
--- decide

=== TEST 2: /v1/models: the file's type and what its matrices are stored as, the CPU's default precision for block-quantized weights (q8), no images without an mmproj
--- request
GET /v1/models
--- error_code: 200
--- response_body_like chomp
"weights":"Q4_K_M","weight_types":\[\{"type":"Q5_0","matrices":27,"bytes":160600,"bytes_q8":160600\},\{"type":"Q6_K","matrices":2,"bytes":26880,"bytes_q8":26880\},\{"type":"Q4_K","matrices":2,"bytes":18432,"bytes_q8":18944\},\{"type":"Q8_0","matrices":2,"bytes":10880,"bytes_q8":10880\},\{"type":"F32","matrices":3,"bytes":6656,"bytes_q8":6656\}\],"precision":"q8","precision_default":true,"capabilities":\["systemone"\]\}\]\}$

=== TEST 3: an F16 file with its mmproj: /v1/models says it takes images, and computes exactly by default
--- http_config
    clef_model clef-tiny $TEST_NGINX_CLEF_GGUF/gg1.f16.gguf mmproj=$TEST_NGINX_CLEF_GGUF/gg1.mmproj.gguf threads=1;
    clef_engine zone=clef:32m timeout=10s;
--- request
GET /v1/models
--- error_code: 200
--- response_body_like chomp
"weights":"F16","weight_types":\[\{"type":"F16","matrices":40,"bytes":684352,"bytes_q8":684352\},\{"type":"F32","matrices":4,"bytes":205184,"bytes_q8":205184\}\],"precision":"fp32","precision_default":true,"capabilities":\["systemone","images"\]

=== TEST 4: the F16 file with its mmproj answers a request
--- http_config
    clef_model clef-tiny $TEST_NGINX_CLEF_GGUF/gg1.f16.gguf mmproj=$TEST_NGINX_CLEF_GGUF/gg1.mmproj.gguf threads=1;
    clef_engine zone=clef:32m timeout=10s;
--- request
POST /v1/systemone
{"model":"m","state":"Help!","questions":{"q":{"type":"noul"}}}
--- more_headers
Content-Type: application/json
--- error_code: 200
--- response_body_like chomp
^\{"model":"clef-tiny","answers":\{"q":\{"type":"noul","noul":0\.\d+\}\},"usage":\{"input_tokens":\d+,"output_tokens":0\}\}$

=== TEST 5: the Q4_K_M file split in 3 parts, served from its first: the unsplit file's answers
--- http_config
    clef_model clef-tiny $TEST_NGINX_CLEF_SPLIT threads=1;
    clef_engine zone=clef:32m timeout=10s;
--- request
POST /v1/systemone
{"model":"m","state":"Help! My payouts have been failing for 3 days.","questions":{"is_urgent":{"type":"noul","instructions":"Does this convey urgency?"},"about_money":{"type":"noul","instructions":"Is this about money?"}}}
--- more_headers
Content-Type: application/json
--- decide

=== TEST 6: an IQ4_XS file made by llama-quantize: /v1/models names its type
--- http_config
    clef_model clef-tiny $TEST_NGINX_CLEF_GGUF/types/gg1.iq4_xs.gguf threads=1 precision=q8;
    clef_engine zone=clef:32m timeout=10s;
--- request
GET /v1/models
--- error_code: 200
--- response_body_like chomp
"weights":"IQ4_XS","weight_types":\[\{"type":"IQ4_NL","matrices":29,"bytes":137160,"bytes_q8":152400\},\{"type":"IQ4_XS","matrices":4,"bytes":34816,"bytes_q8":35328\},\{"type":"F32","matrices":3,"bytes":6656,"bytes_q8":6656\}\],"precision":"q8","precision_default":false,"capabilities":\["systemone"\]

=== TEST 7: a dynamic mix (IQ4_XS, IQ2_S, Q3_K, Q2_K beside IQ4_NL, Q5_0, Q8_0) answers at q8
--- http_config
    clef_model clef-tiny $TEST_NGINX_CLEF_GGUF/types/gg1.ud-mix.gguf threads=1 precision=q8;
    clef_engine zone=clef:32m timeout=10s;
--- request
POST /v1/systemone
{"model":"m","state":"Help!","questions":{"q":{"type":"noul"}}}
--- more_headers
Content-Type: application/json
--- error_code: 200
--- response_body_like chomp
^\{"model":"clef-tiny","answers":\{"q":\{"type":"noul","noul":0\.\d+\}\},"usage":\{"input_tokens":\d+,"output_tokens":0\}\}$
