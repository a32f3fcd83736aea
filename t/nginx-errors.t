# Every error status of the clef locations, with its exact JSON body
# (docs/spec/protocol.md §7, §9): 400 limits as {"detail": "..."},
# 400 max_tokens_exceeded and 401/403 as {"detail": {"error_type",
# "message"}}, 422 as {"detail": [{"type","loc","msg","input"}]}, 405, 413
# (also nginx's own, from client_max_body_size), 415 (multipart too), and
# the media this server cannot take (images, assets, image parts of a
# state: 400 *_unsupported, typed; videos to a model without a tower,
# audio, and media_kwargs keys the server does not take, with their loc:
# the TEST 5m* blocks).
# Every response is JSON and carries x-typesafe-request-id.  The SDK's headers are accepted.
# (429, 503 and 504 need a stopped engine: t/nginx-overload.t and
# t/nginx-lifecycle.t.)
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClefTest;
use Test::Nginx::Socket 'no_plan';
use POSIX ();

master_on();
repeat_each(2);

my $model = ClefModels->model_dir(1, 1);

# limit_req keyed by the connection: the two pipelined requests of a block
# share one, a repeated block or another nginx does not
clef_defaults(model => $model, http => <<'HTTP', locations => <<'LOC');
    limit_req_zone "$pid:$connection" zone=once:1m rate=1r/m;
    limit_req_status 429;
HTTP
        location = /v1/systemone { clef_systemone; }
        location = /v1/models { clef_models; }
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
            clef_max_audio 1;
            clef_max_tokens 200;
            clef_systemone;
        }
LOC

# /v1/models dates a checkpoint directory by its config.json
my $release_date = POSIX::strftime('%Y-%m-%d',
    gmtime((stat "$model/config.json")[9]));

# Every answer is JSON with a request id; a body is sent as JSON unless
# the block says otherwise; bodies compare once canonical.
add_block_preprocessor(sub {
    my $b = shift;
    my $n = defined $b->pipelined_requests ? 2 : 1;
    my $like = "Content-Type: ^application/json\n"
             . "x-typesafe-request-id: ^req_[0-9a-f]{32}\$\n";
    $b->set_value(response_headers_like => $n == 1 ? $like : [($like) x $n]);
    my $h = $b->more_headers // '';
    $b->set_value(more_headers => "Content-Type: application/json\n$h")
        unless $h =~ /^Content-Type:/mi;
    $b->set_value(response_body_json_sort => 1);
    my $body = $b->response_body;
    if (defined $body && !ref $body) {
        $body =~ s/RELEASE_DATE/$release_date/g;
        $b->set_value(response_body => $body);
    }
});

run_tests();

__DATA__

=== TEST 1: GET is not allowed
--- request
GET /v1/systemone
--- error_code: 405
--- response_body canon_json
{"detail":"Method Not Allowed"}

=== TEST 2: PUT is not allowed either
--- request
PUT /v1/systemone
{}
--- error_code: 405
--- response_body canon_json
{"detail":"Method Not Allowed"}

=== TEST 3: POST to /v1/models is not allowed
--- request
POST /v1/models
{}
--- error_code: 405
--- response_body canon_json
{"detail":"Method Not Allowed"}

=== TEST 4: a non-JSON content type
--- request
POST /v1/systemone
{"model":"m","state":"s","questions":{"q":{"type":"noul"}}}
--- more_headers
Content-Type: text/plain
--- error_code: 415
--- response_body canon_json
{"detail":"Unsupported Media Type: \"text/plain\"; send the body as application/json"}

=== TEST 5: form encoding (curl -d without a type)
--- request
POST /v1/systemone
{"model":"m","state":"s","questions":{"q":{"type":"noul"}}}
--- more_headers
Content-Type: application/x-www-form-urlencoded
--- error_code: 415
--- response_body canon_json
{"detail":"Unsupported Media Type: \"application/x-www-form-urlencoded\"; send the body as application/json"}

=== TEST 5a: a multipart upload (the SDK's experimental images)
--- request
POST /v1/systemone
--xyz--
--- more_headers
Content-Type: multipart/form-data; boundary=xyz
--- error_code: 415
--- response_body canon_json
{"detail":"Unsupported Media Type: multipart bodies (image uploads with an \"assets\" map) are not supported; send the request as application/json with a text or JSON state"}

=== TEST 5a2: images this model cannot take
--- request
POST /v1/systemone
{"model":"m","state":"s","images":["data:image/png;base64,iVBORw0KGgo=",{"content_type":"image/jpeg","base64":"/9j/"}],"questions":{"q":{"type":"noul"}}}
--- error_code: 400
--- response_body canon_json
{"detail":{"error_type":"images_unsupported","message":"This model does not accept images (2 given): remove \"images\"; text and JSON states are supported."}}

=== TEST 5a3: an assets map
--- request
POST /v1/systemone
{"model":"m","state":"see img1","assets":{"img1":{"type":"image","format":"png","part":"img1"}},"questions":{"q":{"type":"noul"}}}
--- error_code: 400
--- response_body canon_json
{"detail":{"error_type":"assets_unsupported","message":"\"assets\" (images uploaded as multipart parts and referenced from the request) are not supported by this server; send application/json with a text or JSON state."}}

=== TEST 5a4: OpenRouter-style image parts in the state
--- request
POST /v1/systemone
{"model":"m","state":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}],"questions":{"q":{"type":"noul"}}}
--- error_code: 400
--- response_body canon_json
{"detail":{"error_type":"images_unsupported","message":"Image parts in the state (state[1] has type \"image_url\") are not supported; this server reads the state as text or JSON."}}

=== TEST 5a5: an empty images array and a null assets are fine
--- request
POST /v1/systemone
{"model":"m","state":"s","images":[],"assets":null,"questions":{"q":{"type":"noul"}}}
--- error_code: 200
--- decide

=== TEST 5m1: videos to a model without a vision tower, refused by name
--- request
POST /v1/systemone
{"model":"m","state":"s","videos":["data:video/mp4;base64,AAAA",{"content_type":"video/webm","base64":"AAAA"}],"questions":{"q":{"type":"noul"}}}
--- error_code: 400
--- response_body canon_json
{"detail":{"error_type":"videos_unsupported","message":"This model does not accept videos (2 given): remove \"videos\"; text and JSON states are supported.","loc":["body","videos"]}}

=== TEST 5m2: audio, a model without an audio tower
--- request
POST /v1/systemone
{"model":"m","state":"s","audio":["data:audio/wav;base64,AAAA"],"questions":{"q":{"type":"noul"}}}
--- error_code: 400
--- response_body canon_json
{"detail":{"error_type":"audio_unsupported","message":"This model does not accept audio clips (1 given): remove \"audio\"; text and JSON states are supported.","loc":["body","audio"]}}

=== TEST 5m3: a media_kwargs key the server does not take, named
--- request
POST /v1/systemone
{"model":"m","state":"s","media_kwargs":{"fps":2,"do_resize":false},"questions":{"q":{"type":"noul"}}}
--- error_code: 400
--- response_body canon_json
{"detail":{"error_type":"media_kwargs_unsupported","message":"The media_kwargs key \"do_resize\" is not supported: this server takes fps, size, min_pixels, max_pixels, cap_pixels_per_frame and max_video_tokens; remove it.","loc":["body","media_kwargs","do_resize"]}}

=== TEST 5m4: media not served yet: an input_audio part in the state
--- request
POST /v1/systemone
{"model":"m","state":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}],"questions":{"q":{"type":"noul"}}}
--- error_code: 400
--- response_body canon_json
{"detail":{"error_type":"audio_unsupported","message":"Audio parts in the state (state[0] has type \"input_audio\") are not supported; this server reads the state as text or JSON.","loc":["body","state",0]}}

=== TEST 5m5: media not served yet: videos that are not a list (422)
--- request
POST /v1/systemone
{"model":"m","state":"s","videos":"clip.mp4","questions":{"q":{"type":"noul"}}}
--- error_code: 422
--- response_body canon_json
{"detail":[{"type":"list_type","loc":["body","videos"],"msg":"Input should be a valid list","input":"clip.mp4"}]}

=== TEST 5m6: media not served yet: empty or null fields are fine
--- request
POST /v1/systemone
{"model":"m","state":"s","videos":[],"audio":null,"media_kwargs":{},"questions":{"q":{"type":"noul"}}}
--- error_code: 200
--- decide

=== TEST 5b: a content encoding other than zstd
--- request
POST /v1/systemone
{"model":"m","state":"s","questions":{"q":{"type":"noul"}}}
--- more_headers
Content-Encoding: gzip
--- error_code: 415
--- response_body canon_json
{"detail":"Unsupported Content-Encoding: \"gzip\"; send zstd or no encoding"}

=== TEST 5c: a body that says zstd but is not
--- request
POST /v1/systemone
{"model":"m","state":"s","questions":{"q":{"type":"noul"}}}
--- more_headers
Content-Encoding: zstd
--- error_code: 400
--- response_body canon_json
{"detail":"Cannot decompress the zstd body: Unknown frame descriptor"}

=== TEST 6: a body over client_max_body_size (nginx's own 413, as JSON)
--- request eval
"POST /small/v1/systemone\n" . '{"model":"m","state":"' . ('x' x 2000) . '","questions":{"q":{"type":"noul"}}}'
--- error_code: 413
--- response_body canon_json
{"detail":"Request body too large: the limit is 1024 bytes"}

=== TEST 7: invalid JSON
--- request
POST /v1/systemone
{"model":
--- error_code: 422
--- response_body canon_json
{"detail":[{"type":"json_invalid","loc":["body",9],"msg":"invalid JSON at byte 9: unexpected end of input, expected a value","input":{}}]}

=== TEST 8: an empty body
--- request
POST /v1/systemone

--- error_code: 422
--- response_body canon_json
{"detail":[{"type":"json_invalid","loc":["body",0],"msg":"invalid JSON at byte 0: unexpected end of input, expected a value","input":{}}]}

=== TEST 9: questions missing
--- request
POST /v1/systemone
{"model":"jev-latest","state":"x"}
--- error_code: 422
--- response_body canon_json
{"detail":[{"type":"missing","loc":["body","questions"],"msg":"Field required","input":{"model":"jev-latest","state":"x"}}]}

=== TEST 10: state missing
--- request
POST /v1/systemone
{"model":"jev-latest","questions":{"q":{"type":"noul"}}}
--- error_code: 422
--- response_body canon_json
{"detail":[{"type":"missing","loc":["body","state"],"msg":"Field required","input":{"model":"jev-latest","questions":{"q":{"type":"noul"}}}}]}

=== TEST 11: a question type that does not exist
--- request
POST /v1/systemone
{"model":"jev-latest","state":"x","questions":{"q1":{"type":"boolean","instructions":"x"}}}
--- error_code: 422
--- response_body canon_json
{"detail":[{"type":"union_tag_invalid","loc":["body","questions","q1"],"msg":"Input tag 'boolean' found using 'type' does not match any of the expected tags: 'noul', 'choice', 'score'","input":{"instructions":"x","type":"boolean"}}]}

=== TEST 12: questions as a list
--- request
POST /v1/systemone
{"model":"jev-latest","state":"x","questions":[{"type":"noul"}]}
--- error_code: 422
--- response_body canon_json
{"detail":[{"type":"dict_type","loc":["body","questions"],"msg":"Input should be a valid dictionary","input":[{"type":"noul"}]}]}

=== TEST 13: a choice without criteria
--- request
POST /v1/systemone
{"model":"jev-latest","state":"x","questions":{"c":{"type":"choice","instructions":"x"}}}
--- error_code: 422
--- response_body canon_json
{"detail":[{"type":"missing","loc":["body","questions","c","criteria"],"msg":"Field required","input":{"instructions":"x","type":"choice"}}]}

=== TEST 14: 256 choices
--- request eval
"POST /v1/systemone\n" . '{"model":"jev-latest","state":"x","questions":{"c":{"type":"choice","instructions":"x","criteria":{'
  . CORE::join(',', map { "\"o$_\":null" } 1 .. 256) . '}}}}'
--- error_code: 400
--- response_body canon_json
{"detail":"Too many choices. Must have at most 255 choices."}

=== TEST 15: 11 score levels
--- request eval
"POST /v1/systemone\n" . '{"model":"jev-latest","state":"x","questions":{"s":{"type":"score","instructions":"x","criteria":['
  . CORE::join(',', map { "\"level $_\"" } 0 .. 10) . ']}}}'
--- error_code: 400
--- response_body canon_json
{"detail":"Too many score levels. Must have at most 10 levels."}

=== TEST 16: 65 questions (clef_max_questions 64 by default)
--- request eval
"POST /v1/systemone\n" . '{"model":"jev-latest","state":"x","questions":{'
  . CORE::join(',', map { "\"q$_\":{\"type\":\"noul\"}" } 1 .. 65) . '}}'
--- error_code: 400
--- response_body canon_json
{"detail":"Too many questions. Must have at most 64 questions."}

=== TEST 17: clef_max_questions 2 in a location
--- request
POST /tight/v1/systemone
{"model":"jev-latest","state":"x","questions":{"a":{"type":"noul"},"b":{"type":"noul"},"c":{"type":"noul"}}}
--- error_code: 400
--- response_body canon_json
{"detail":"Too many questions. Must have at most 2 questions."}

=== TEST 18: clef_max_images 1 in a location
--- request
POST /tight/v1/systemone
{"model":"jev-latest","state":"x","images":["data:image/png;base64,AA==","data:image/png;base64,AA=="],"questions":{"a":{"type":"noul"}}}
--- error_code: 400
--- response_body canon_json
{"detail":"Too many images. Must have at most 1 image."}

=== TEST 18a: clef_max_audio 1 in a location
--- request
POST /tight/v1/systemone
{"model":"jev-latest","state":"x","audio":["data:audio/wav;base64,AA==",{"content_type":"audio/mpeg","base64":"AA=="}],"questions":{"a":{"type":"noul"}}}
--- error_code: 400
--- response_body canon_json
{"detail":"Too many audio clips. Must have at most 1 audio clip."}

=== TEST 19: a choice with one option
--- request
POST /v1/systemone
{"model":"jev-latest","state":"x","questions":{"c":{"type":"choice","instructions":"x","criteria":{"only":null}}}}
--- error_code: 400
--- response_body canon_json
{"detail":"Too few choices. Must have at least 2 choices."}

=== TEST 20: no question at all
--- request
POST /v1/systemone
{"model":"jev-latest","state":"x","questions":{}}
--- error_code: 400
--- response_body canon_json
{"detail":"Too few questions. Must have at least 1 question."}

=== TEST 21: more tokens than clef_max_tokens
--- request eval
"POST /tight/v1/systemone\n" . '{"model":"jev-latest","state":"' . ('word ' x 300) . '","questions":{"a":{"type":"noul","instructions":"Is it long?"}}}'
--- error_code: 400
--- response_body canon_json
{"detail":{"error_type":"max_tokens_exceeded","message":"Request needs 438 tokens (state 301, prompt and schema 137); the limit is 200."}}

=== TEST 22: no API key
--- request
POST /keyed/v1/systemone
{"model":"jev-latest","state":"x","questions":{"q":{"type":"noul"}}}
--- error_code: 403
--- response_body canon_json
{"detail":{"error_type":"authentication_error","message":"Must supply an API key! Check your request and try again."}}

=== TEST 23: an empty bearer token
--- request
POST /keyed/v1/systemone
{"model":"jev-latest","state":"x","questions":{"q":{"type":"noul"}}}
--- more_headers
Authorization: Bearer 
--- error_code: 403
--- response_body canon_json
{"detail":{"error_type":"authentication_error","message":"Must supply an API key! Check your request and try again."}}

=== TEST 24: a wrong key
--- request
POST /keyed/v1/systemone
{"model":"jev-latest","state":"x","questions":{"q":{"type":"noul"}}}
--- more_headers
Authorization: Bearer not-the-key
--- error_code: 401
--- response_body canon_json
{"detail":{"error_type":"authentication_error","message":"Cannot authenticate with the server. Please check your API key and try again."}}

=== TEST 25: a wrong key on /v1/models
--- request
GET /keyed/v1/models
--- more_headers
Authorization: Bearer secret-key-2
--- error_code: 401
--- response_body canon_json
{"detail":{"error_type":"authentication_error","message":"Cannot authenticate with the server. Please check your API key and try again."}}

=== TEST 26: a good key and the SDK's headers: answered
--- request
POST /keyed/v1/systemone
{"model":"jev-latest","state":"x","questions":{"q":{"type":"noul"}}}
--- more_headers
Authorization: Bearer secret-key-2
Accept: application/json
User-Agent: typesafe-sdk/0.6.0
X-TypeSafe-SDK: typesafe-sdk/0.6.0
X-TypeSafe-Runtime: node/22.1.0 (linux; x64)
X-TypeSafe-Retry-Count: 1
Accept-Encoding: gzip, deflate
--- error_code: 200
--- decide

=== TEST 27: limit_req lets the first request through and refuses the second with nginx's 429, as JSON
--- pipelined_requests eval
["POST /limited/v1/systemone\n{\"model\":\"jev-latest\",\"state\":\"x\"}",
 "POST /limited/v1/systemone\n{\"model\":\"jev-latest\",\"state\":\"x\"}"]
--- error_code eval
[422, 429]
--- response_body eval
[ClefTest::canon_json('{"detail":[{"type":"missing","loc":["body","questions"],"msg":"Field required","input":{"model":"jev-latest","state":"x"}}]}'),
 ClefTest::canon_json('{"detail":{"error_type":"rate_limit_error","message":"Too Many Requests"}}')]
--- response_headers eval
["Content-Type: application/json", "Retry-After: 1\nretry-after-ms: 1000"]

=== TEST 29: the models list
--- request
GET /v1/models
--- error_code: 200
--- response_body canon_json
{"models":[{"name":"clef-tiny","description":"Clef decision model clef-tiny: 4 layers, hidden size 64, BF16 weights, cpu backend; text only","release_date":"RELEASE_DATE","weights":"BF16","weight_types":[{"type":"BF16","matrices":64,"bytes":19895168,"bytes_q8":19895168}],"precision":"fp32","precision_default":true,"capabilities":["systemone"]}]}
