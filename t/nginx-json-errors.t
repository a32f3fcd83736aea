# Every error nginx itself sends is JSON where clef_json_errors is on, as
# in the shipped conf/clef.conf and conf/edge.conf: an unknown path, a
# malformed request line, Content-Length together with chunked, a negative
# Content-Length, a URI or header too long, a body over the limit outside a
# clef location, limit_req's 429, a 500 and a 502.  Each exact body is
# asserted; a JSON answer of a proxied node is passed through untouched,
# and a server with clef_json_errors off keeps nginx's HTML.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClefTest;
use Test::Nginx::Socket 'no_plan';

master_on();
repeat_each(2);

# limit_req keyed by the connection: the two pipelined requests of a block
# share one, a repeated block or another nginx does not.  /html/ keeps
# nginx's own pages.
clef_defaults(model => ClefModels->model_dir(1), http => <<'HTTP', locations => <<'LOC');
    clef_json_errors on;
    large_client_header_buffers 2 1k;
    limit_req_zone "$pid:$connection" zone=once:1m rate=1r/m;
    limit_req_status 429;
HTTP
        location = /v1/systemone { clef_systemone; }
        location = /upload { client_max_body_size 10; return 200 "ok\n"; }
        location = /limited { limit_req zone=once; root html; }
        location = /boom { return 500; }
        location = /gone { proxy_pass http://127.0.0.1:1; }
        location /html/ { clef_json_errors off; }
        location = /json-node {
            default_type application/json;
            return 429 '{"detail":{"error_type":"rate_limit_error","message":"from the node"}}';
        }
LOC

# every error here is JSON, unless the block says what it is
add_block_preprocessor(sub {
    my $b = shift;
    $b->set_value(response_headers => 'Content-Type: application/json')
        unless defined $b->response_headers
            || defined $b->pipelined_requests
            || defined $b->response_body_like;
});

run_tests();

__DATA__

=== TEST 1: an unknown path
--- request
GET /nothing-here
--- error_code: 404
--- response_body chomp
{"detail":"Not Found"}

=== TEST 2: a malformed request line
--- raw_request eval
"GARBAGE\r\n\r\n"
--- error_code: 400
--- response_body chomp
{"detail":"Bad Request"}

=== TEST 3: Content-Length together with chunked
--- raw_request eval
"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n"
--- error_code: 400
--- response_body chomp
{"detail":"Bad Request"}

=== TEST 4: a negative Content-Length
--- raw_request eval
"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\nConnection: close\r\n\r\n"
--- error_code: 400
--- response_body chomp
{"detail":"Bad Request"}

=== TEST 5: a URI too long
--- request eval
"GET /" . ('a' x 3000)
--- error_code: 414
--- response_body chomp
{"detail":"URI Too Long"}

=== TEST 6: a header too long (nginx answers its 494 with 400 and keeps no trace of why)
--- request
GET /
--- more_headers eval
"X-Big: " . ('b' x 3000)
--- error_code: 400
--- response_body chomp
{"detail":"Bad Request"}

=== TEST 7: a body over client_max_body_size outside a clef location
--- request eval
"POST /upload\n" . ('x' x 100)
--- error_code: 413
--- response_body chomp
{"detail":"Request body too large: the limit is 10 bytes"}

=== TEST 8: a 500
--- request
GET /boom
--- error_code: 500
--- response_body chomp
{"detail":{"error_type":"internal_error","message":"the server answered 500"}}

=== TEST 9: an upstream that refuses: 502
--- request
GET /gone
--- error_code: 502
--- response_body chomp
{"detail":{"error_type":"internal_error","message":"the server answered 502"}}
--- no_error_log
[alert]
[emerg]

=== TEST 10: a proxied node's own JSON error passes through
--- request
GET /json-node
--- error_code: 429
--- response_body chomp
{"detail":{"error_type":"rate_limit_error","message":"from the node"}}

=== TEST 11: limit_req: 429 in the shape the SDKs retry on, with Retry-After
--- user_files
>>> limited
ok
--- pipelined_requests eval
["GET /limited", "GET /limited"]
--- error_code eval
[200, 429]
--- response_body eval
["ok\n", '{"detail":{"error_type":"rate_limit_error","message":"Too Many Requests"}}']
--- response_headers eval
["Content-Type: text/plain", "Content-Type: application/json\nRetry-After: 1"]

=== TEST 12: clef_json_errors off keeps nginx's own HTML page
--- request
GET /html/nothing-here
--- error_code: 404
--- response_headers
Content-Type: text/html
--- response_body_like: ^<html>
