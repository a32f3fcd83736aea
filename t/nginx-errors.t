# Every error status of the clef locations, with its exact JSON body
# (spec/systemone-protocol.md §7, §9): 400 limits as {"detail": "..."},
# 400 max_tokens_exceeded and 401/403 as {"detail": {"error_type",
# "message"}}, 422 as {"detail": [{"type","loc","msg","input"}]}, 405, 413
# (also nginx's own, from client_max_body_size), 415 (multipart too), and
# the media this server cannot take (images, assets, image parts of a
# state: 400 *_unsupported, typed; videos, audio and media_kwargs, which
# no model is served with yet, with their loc: the TEST 5m* blocks).  Every response is
# JSON and carries x-typesafe-request-id.  The SDK's headers are accepted.
# (429, 503 and 504 need a stopped engine: t/nginx-overload.t and
# t/nginx-lifecycle.t.)
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::Base;
use ClefNginx;
use POSIX ();

filters {
    request => 'chomp', status => 'chomp', json => 'chomp', body => 'chomp',
    headers => 'chomp', response_headers => 'chomp',
};

my $srv = ClefNginx->new(
    model => ClefNginx->model_dir(1, 1),
    workers => 1,
    http_config => '    limit_req_zone $binary_remote_addr zone=once:1m rate=1r/m;'
                 . "\n    limit_req_status 429;\n",
    server_config => <<'LOC');
        location = /small/v1/systemone {
            client_max_body_size 1k;
            clef_systemone;
        }
        location = /keyed/v1/systemone {
            clef_api_key secret-key-1 secret-key-2;
            clef_systemone;
        }
        location = /keyed/v1/models {
            clef_api_key secret-key-1;
            clef_models;
        }
        location = /limited/v1/systemone {
            limit_req zone=once;
            clef_systemone;
        }
        location = /tight/v1/systemone {
            clef_max_questions 2;
            clef_max_images 1;
            clef_max_tokens 200;
            clef_systemone;
        }
LOC
$srv->start_ready;

# /v1/models dates a checkpoint directory by its config.json
my $release_date = POSIX::strftime('%Y-%m-%d',
    gmtime((stat ClefNginx->model_dir(1, 1) . '/config.json')[9]));

my $header_checks = 0;
for my $b (blocks()) {
    my $h = $b->response_headers;
    my @lines = split /\n/, $h // '';
    $header_checks += @lines;
}
plan tests => 4 * blocks() + $header_checks + 1;

run {
    my $b = shift;
    my ($method, $uri) = split ' ', $b->request;
    my $body = $b->body;
    my $hdrs = $b->headers // '';
    my %h = map { /^([^:]+):\s*(.*)$/ ? ($1 => $2) : () } split /\n/, $hdrs;
    $h{'Content-Type'} //= 'application/json' if defined $body;
    delete $h{'Content-Type'} if ($h{'Content-Type'} // '') eq 'none';

    my $r = $srv->request($method, $uri, $body, \%h);
    is $r->{status}, $b->status, $b->name . ': status';
    like $r->{headers}{'content-type'} // '', qr{^application/json},
        $b->name . ': a JSON body';
    like $r->{headers}{'x-typesafe-request-id'} // '', qr/^req_[0-9a-f]{32}$/,
        $b->name . ': x-typesafe-request-id';

    my $text = $b->json;
    $text =~ s/RELEASE_DATE/$release_date/g;
    my $want = $text eq 'DECIDE' ? $srv->decide($body)
                                 : ClefNginx->json->decode($text);
    is_deeply $r->{json}, $want, $b->name . ': the exact body'
        or diag $r->{content};

    for my $line (split /\n/, $b->response_headers // '') {
        my ($k, $v) = $line =~ /^([^:]+):\s*(.*)$/;
        is $r->{headers}{lc $k}, $v, $b->name . ": header $k";
    }
};

$srv->stop;
is_deeply [$srv->bad_log_lines], [], 'no [alert], [crit] or [emerg] in error.log';

__DATA__

=== TEST 1: GET is not allowed
--- request: GET /v1/systemone
--- status: 405
--- json
{"detail":"Method Not Allowed"}

=== TEST 2: PUT is not allowed either
--- request: PUT /v1/systemone
--- body: {}
--- status: 405
--- json
{"detail":"Method Not Allowed"}

=== TEST 3: POST to /v1/models is not allowed
--- request: POST /v1/models
--- body: {}
--- status: 405
--- json
{"detail":"Method Not Allowed"}

=== TEST 4: a non-JSON content type
--- request: POST /v1/systemone
--- headers
Content-Type: text/plain
--- body: {"model":"m","state":"s","questions":{"q":{"type":"noul"}}}
--- status: 415
--- json
{"detail":"Unsupported Media Type: \"text/plain\"; send the body as application/json"}

=== TEST 5: form encoding (curl -d without a type)
--- request: POST /v1/systemone
--- headers
Content-Type: application/x-www-form-urlencoded
--- body: {"model":"m","state":"s","questions":{"q":{"type":"noul"}}}
--- status: 415
--- json
{"detail":"Unsupported Media Type: \"application/x-www-form-urlencoded\"; send the body as application/json"}

=== TEST 5a: a multipart upload (the SDK's experimental images)
--- request: POST /v1/systemone
--- headers
Content-Type: multipart/form-data; boundary=xyz
--- body: --xyz--
--- status: 415
--- json
{"detail":"Unsupported Media Type: multipart bodies (image uploads with an \"assets\" map) are not supported; send the request as application/json with a text or JSON state"}

=== TEST 5a2: images this model cannot take
--- request: POST /v1/systemone
--- body: {"model":"m","state":"s","images":["data:image/png;base64,iVBORw0KGgo=",{"content_type":"image/jpeg","base64":"/9j/"}],"questions":{"q":{"type":"noul"}}}
--- status: 400
--- json
{"detail":{"error_type":"images_unsupported","message":"This model does not accept images (2 given): remove \"images\"; text and JSON states are supported."}}

=== TEST 5a3: an assets map
--- request: POST /v1/systemone
--- body: {"model":"m","state":"see img1","assets":{"img1":{"type":"image","format":"png","part":"img1"}},"questions":{"q":{"type":"noul"}}}
--- status: 400
--- json
{"detail":{"error_type":"assets_unsupported","message":"\"assets\" (images uploaded as multipart parts and referenced from the request) are not supported by this server; send application/json with a text or JSON state."}}

=== TEST 5a4: OpenRouter-style image parts in the state
--- request: POST /v1/systemone
--- body: {"model":"m","state":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}],"questions":{"q":{"type":"noul"}}}
--- status: 400
--- json
{"detail":{"error_type":"images_unsupported","message":"Image parts in the state (state[1] has type \"image_url\") are not supported; this server reads the state as text or JSON."}}

=== TEST 5a5: an empty images array and a null assets are fine
--- request: POST /v1/systemone
--- body: {"model":"m","state":"s","images":[],"assets":null,"questions":{"q":{"type":"noul"}}}
--- status: 200
--- json
DECIDE

=== TEST 5m1: media not served yet (issues 21, 22): videos, refused by name
--- request: POST /v1/systemone
--- body: {"model":"m","state":"s","videos":["data:video/mp4;base64,AAAA",{"content_type":"video/webm","base64":"AAAA"}],"questions":{"q":{"type":"noul"}}}
--- status: 400
--- json
{"detail":{"error_type":"videos_unsupported","message":"This server does not take videos yet (2 given): remove \"videos\"; text and JSON states are supported.","loc":["body","videos"]}}

=== TEST 5m2: media not served yet: audio
--- request: POST /v1/systemone
--- body: {"model":"m","state":"s","audio":["data:audio/wav;base64,AAAA"],"questions":{"q":{"type":"noul"}}}
--- status: 400
--- json
{"detail":{"error_type":"audio_unsupported","message":"This server does not take audio clips yet (1 given): remove \"audio\"; text and JSON states are supported.","loc":["body","audio"]}}

=== TEST 5m3: media not served yet: a media_kwargs key, named
--- request: POST /v1/systemone
--- body: {"model":"m","state":"s","media_kwargs":{"max_pixels":1000000},"questions":{"q":{"type":"noul"}}}
--- status: 400
--- json
{"detail":{"error_type":"media_kwargs_unsupported","message":"The media_kwargs key \"max_pixels\" is not supported: this server passes no arguments to its media processors; remove it.","loc":["body","media_kwargs","max_pixels"]}}

=== TEST 5m4: media not served yet: an input_audio part in the state
--- request: POST /v1/systemone
--- body: {"model":"m","state":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}],"questions":{"q":{"type":"noul"}}}
--- status: 400
--- json
{"detail":{"error_type":"audio_unsupported","message":"Audio parts in the state (state[0] has type \"input_audio\") are not supported; this server reads the state as text or JSON.","loc":["body","state",0]}}

=== TEST 5m5: media not served yet: videos that are not a list (422)
--- request: POST /v1/systemone
--- body: {"model":"m","state":"s","videos":"clip.mp4","questions":{"q":{"type":"noul"}}}
--- status: 422
--- json
{"detail":[{"type":"list_type","loc":["body","videos"],"msg":"Input should be a valid list","input":"clip.mp4"}]}

=== TEST 5m6: media not served yet: empty or null fields are fine
--- request: POST /v1/systemone
--- body: {"model":"m","state":"s","videos":[],"audio":null,"media_kwargs":{},"questions":{"q":{"type":"noul"}}}
--- status: 200
--- json
DECIDE

=== TEST 5b: a content encoding other than zstd
--- request: POST /v1/systemone
--- headers
Content-Encoding: gzip
--- body: {"model":"m","state":"s","questions":{"q":{"type":"noul"}}}
--- status: 415
--- json
{"detail":"Unsupported Content-Encoding: \"gzip\"; send zstd or no encoding"}

=== TEST 5c: a body that says zstd but is not
--- request: POST /v1/systemone
--- headers
Content-Encoding: zstd
--- body: {"model":"m","state":"s","questions":{"q":{"type":"noul"}}}
--- status: 400
--- json
{"detail":"Cannot decompress the zstd body: Unknown frame descriptor"}

=== TEST 6: a body over client_max_body_size (nginx's own 413, as JSON)
--- request: POST /small/v1/systemone
--- body eval
'{"model":"m","state":"' . ('x' x 2000) . '","questions":{"q":{"type":"noul"}}}'
--- status: 413
--- json
{"detail":"Request body too large: the limit is 1024 bytes"}

=== TEST 7: invalid JSON
--- request: POST /v1/systemone
--- body: {"model":
--- status: 422
--- json
{"detail":[{"type":"json_invalid","loc":["body",9],"msg":"invalid JSON at byte 9: unexpected end of input, expected a value","input":{}}]}

=== TEST 8: an empty body
--- request: POST /v1/systemone
--- body:
--- status: 422
--- json
{"detail":[{"type":"json_invalid","loc":["body",0],"msg":"invalid JSON at byte 0: unexpected end of input, expected a value","input":{}}]}

=== TEST 9: questions missing
--- request: POST /v1/systemone
--- body: {"model":"jev-latest","state":"x"}
--- status: 422
--- json
{"detail":[{"type":"missing","loc":["body","questions"],"msg":"Field required","input":{"model":"jev-latest","state":"x"}}]}

=== TEST 10: state missing
--- request: POST /v1/systemone
--- body: {"model":"jev-latest","questions":{"q":{"type":"noul"}}}
--- status: 422
--- json
{"detail":[{"type":"missing","loc":["body","state"],"msg":"Field required","input":{"model":"jev-latest","questions":{"q":{"type":"noul"}}}}]}

=== TEST 11: a question type that does not exist
--- request: POST /v1/systemone
--- body: {"model":"jev-latest","state":"x","questions":{"q1":{"type":"boolean","instructions":"x"}}}
--- status: 422
--- json
{"detail":[{"type":"union_tag_invalid","loc":["body","questions","q1"],"msg":"Input tag 'boolean' found using 'type' does not match any of the expected tags: 'noul', 'choice', 'score'","input":{"instructions":"x","type":"boolean"}}]}

=== TEST 12: questions as a list
--- request: POST /v1/systemone
--- body: {"model":"jev-latest","state":"x","questions":[{"type":"noul"}]}
--- status: 422
--- json
{"detail":[{"type":"dict_type","loc":["body","questions"],"msg":"Input should be a valid dictionary","input":[{"type":"noul"}]}]}

=== TEST 13: a choice without criteria
--- request: POST /v1/systemone
--- body: {"model":"jev-latest","state":"x","questions":{"c":{"type":"choice","instructions":"x"}}}
--- status: 422
--- json
{"detail":[{"type":"missing","loc":["body","questions","c","criteria"],"msg":"Field required","input":{"instructions":"x","type":"choice"}}]}

=== TEST 14: 256 choices
--- request: POST /v1/systemone
--- body eval
'{"model":"jev-latest","state":"x","questions":{"c":{"type":"choice","instructions":"x","criteria":{'
  . CORE::join(',', map { "\"o$_\":null" } 1 .. 256) . '}}}}'
--- status: 400
--- json
{"detail":"Too many choices. Must have at most 255 choices."}

=== TEST 15: 11 score levels
--- request: POST /v1/systemone
--- body eval
'{"model":"jev-latest","state":"x","questions":{"s":{"type":"score","instructions":"x","criteria":['
  . CORE::join(',', map { "\"level $_\"" } 0 .. 10) . ']}}}'
--- status: 400
--- json
{"detail":"Too many score levels. Must have at most 10 levels."}

=== TEST 16: 65 questions (clef_max_questions 64 by default)
--- request: POST /v1/systemone
--- body eval
'{"model":"jev-latest","state":"x","questions":{'
  . CORE::join(',', map { "\"q$_\":{\"type\":\"noul\"}" } 1 .. 65) . '}}'
--- status: 400
--- json
{"detail":"Too many questions. Must have at most 64 questions."}

=== TEST 17: clef_max_questions 2 in a location
--- request: POST /tight/v1/systemone
--- body: {"model":"jev-latest","state":"x","questions":{"a":{"type":"noul"},"b":{"type":"noul"},"c":{"type":"noul"}}}
--- status: 400
--- json
{"detail":"Too many questions. Must have at most 2 questions."}

=== TEST 18: clef_max_images 1 in a location
--- request: POST /tight/v1/systemone
--- body: {"model":"jev-latest","state":"x","images":["data:image/png;base64,AA==","data:image/png;base64,AA=="],"questions":{"a":{"type":"noul"}}}
--- status: 400
--- json
{"detail":"Too many images. Must have at most 1 image."}

=== TEST 19: a choice with one option
--- request: POST /v1/systemone
--- body: {"model":"jev-latest","state":"x","questions":{"c":{"type":"choice","instructions":"x","criteria":{"only":null}}}}
--- status: 400
--- json
{"detail":"Too few choices. Must have at least 2 choices."}

=== TEST 20: no question at all
--- request: POST /v1/systemone
--- body: {"model":"jev-latest","state":"x","questions":{}}
--- status: 400
--- json
{"detail":"Too few questions. Must have at least 1 question."}

=== TEST 21: more tokens than clef_max_tokens
--- request: POST /tight/v1/systemone
--- body eval
'{"model":"jev-latest","state":"' . ('word ' x 300) . '","questions":{"a":{"type":"noul","instructions":"Is it long?"}}}'
--- status: 400
--- json
{"detail":{"error_type":"max_tokens_exceeded","message":"Request needs 438 tokens (state 301, prompt and schema 137); the limit is 200."}}

=== TEST 22: no API key
--- request: POST /keyed/v1/systemone
--- body: {"model":"jev-latest","state":"x","questions":{"q":{"type":"noul"}}}
--- status: 403
--- json
{"detail":{"error_type":"authentication_error","message":"Must supply an API key! Check your request and try again."}}

=== TEST 23: an empty bearer token
--- request: POST /keyed/v1/systemone
--- headers
Authorization: Bearer 
--- body: {"model":"jev-latest","state":"x","questions":{"q":{"type":"noul"}}}
--- status: 403
--- json
{"detail":{"error_type":"authentication_error","message":"Must supply an API key! Check your request and try again."}}

=== TEST 24: a wrong key
--- request: POST /keyed/v1/systemone
--- headers
Authorization: Bearer not-the-key
--- body: {"model":"jev-latest","state":"x","questions":{"q":{"type":"noul"}}}
--- status: 401
--- json
{"detail":{"error_type":"authentication_error","message":"Cannot authenticate with the server. Please check your API key and try again."}}

=== TEST 25: a wrong key on /v1/models
--- request: GET /keyed/v1/models
--- headers
Authorization: Bearer secret-key-2
--- status: 401
--- json
{"detail":{"error_type":"authentication_error","message":"Cannot authenticate with the server. Please check your API key and try again."}}

=== TEST 26: a good key and the SDK's headers: answered
--- request: POST /keyed/v1/systemone
--- headers
Authorization: Bearer secret-key-2
Accept: application/json
User-Agent: typesafe-sdk/0.6.0
X-TypeSafe-SDK: typesafe-sdk/0.6.0
X-TypeSafe-Runtime: node/22.1.0 (linux; x64)
X-TypeSafe-Retry-Count: 1
Accept-Encoding: gzip, deflate
--- body: {"model":"jev-latest","state":"x","questions":{"q":{"type":"noul"}}}
--- status: 200
--- json: DECIDE

=== TEST 27: limit_req lets the first request through
--- request: POST /limited/v1/systemone
--- body: {"model":"jev-latest","state":"x"}
--- status: 422
--- json
{"detail":[{"type":"missing","loc":["body","questions"],"msg":"Field required","input":{"model":"jev-latest","state":"x"}}]}

=== TEST 28: and refuses the second with nginx's 429, as JSON
--- request: POST /limited/v1/systemone
--- body: {"model":"jev-latest","state":"x"}
--- status: 429
--- json
{"detail":{"error_type":"rate_limit_error","message":"Too Many Requests"}}
--- response_headers
Retry-After: 1
retry-after-ms: 1000

=== TEST 29: the models list
--- request: GET /v1/models
--- status: 200
--- json
{"models":[{"name":"clef-tiny","description":"Clef decision model clef-tiny: 4 layers, hidden size 64, cpu backend; text only","release_date":"RELEASE_DATE","capabilities":["systemone"]}]}
