# An example of a user's own regression suite: the nginx configuration of
# a site that serves Clef through ngx_http_clef_module, tested with
# Test::Nginx::Socket as nginx module users test theirs.  Nothing of the
# project's test code is used; docs/testing.md says
# how to run it.  `make test` runs it as written, against a tiny model made
# by `clef mkmodel` (random weights: the answers' numbers mean nothing, so
# only their shape is asserted).
#
# Environment (Test::Nginx's own variables, plus one for the model):
#   TEST_NGINX_BINARY        the nginx to run (/usr/sbin/nginx)
#   TEST_NGINX_LOAD_MODULES  /usr/lib/nginx/modules/ngx_http_clef_module.so
#   TEST_NGINX_CLEF_MODEL    the model directory
use Test::Nginx::Socket 'no_plan';

master_on();        # as nginx runs in production
repeat_each(2);
timeout(30);        # the first request waits for the model to load

our $HttpConfig = <<'_EOC_';
    clef_model clef-flash $TEST_NGINX_CLEF_MODEL threads=1;
    clef_engine zone=clef:32m timeout=20s;
    clef_json_errors on;
_EOC_

# our API, behind a key
our $Config = <<'_EOC_';
    location = /v1/systemone {
        clef_api_key test-key;
        clef_systemone;
    }
    location = /v1/models { clef_models; }
_EOC_

add_block_preprocessor(sub {
    my $block = shift;
    $block->set_value(http_config => $HttpConfig)
        unless defined $block->http_config;
    $block->set_value(config => $Config)
        unless defined $block->config;
});

run_tests();

__DATA__

=== TEST 1: our API answers a noul question
--- request
POST /v1/systemone
{"model":"jev-latest","state":"Help! My payouts have been failing for 3 days.","questions":{"urgent":{"type":"noul","instructions":"Does this convey urgency?"}}}
--- more_headers
Authorization: Bearer test-key
Content-Type: application/json
--- error_code: 200
--- response_headers_like
x-typesafe-request-id: req_[0-9a-f]{32}
--- response_body_like: ^\{"model":"clef-flash","answers":\{"urgent":\{"type":"noul","noul":0\.\d+\}\},"usage":\{"input_tokens":\d+,"output_tokens":0\}\}$
--- no_error_log
[error]
[alert]
--- shutdown_error_log eval
qr/clef engine \d+: drained, exiting/

=== TEST 2: a client without our key is refused as the SDKs expect
--- request
POST /v1/systemone
{"model":"jev-latest","state":"x","questions":{"q":{"type":"noul"}}}
--- error_code: 403
--- response_body chomp
{"detail":{"error_type":"authentication_error","message":"Must supply an API key! Check your request and try again."}}

=== TEST 3: our model list names our model
--- request
GET /v1/models
--- error_code: 200
--- response_body_like: ^\{"models":\[\{"name":"clef-flash","description":"[^"]+","release_date":"\d{4}-\d\d-\d\d"

=== TEST 4: every other path answers JSON, as our clients expect
--- request
GET /nothing
--- error_code: 404
--- response_body chomp
{"detail":"Not Found"}

=== TEST 5: a typo in our configuration keeps nginx from starting
--- http_config
    clef_model clef-flash $TEST_NGINX_CLEF_MODEL threads=1 precision=fp16;
--- config
--- must_die
--- suppress_stderr
--- error_log
[emerg]
invalid "precision=fp16": precision is fp32, bf16 or q8
