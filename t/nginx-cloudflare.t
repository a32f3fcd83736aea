# The Cloudflare REST form (clef_systemone envelope=cloudflare), called as
# Workers AI's users call it: `curl .../client/v4/accounts/ID/ai/run/
# @cf/cloudflare/MODEL -H "Authorization: Bearer TOKEN" -d '{...}'` (a
# form type that is read as JSON).  The model is the path's; an answer is
# {"result": <the System One answer>, "success": true, "errors": [],
# "messages": []}, exactly what `clef decide` answers inside; every error
# keeps its HTTP status with {"result": null, "success": false, "errors":
# [{"code": <status>, "message": ...}], "messages": []}; the request id is
# in cf-ray.  The same server's /v1/systemone is unchanged.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClefTest;
use Test::Nginx::Socket 'no_plan';

master_on();
repeat_each(2);

clef_defaults(model => ClefModels->model_dir(1), name => 'clef-flash',
              locations => <<'LOC');
        location = /v1/systemone { clef_systemone; }
        location ~ ^/client/v4/accounts/[^/]+/ai/run/ {
            client_max_body_size 2k;
            clef_systemone envelope=cloudflare;
        }
        location ~ ^/keyed/client/v4/accounts/[^/]+/ai/run/ {
            clef_api_key cf-token;
            clef_systemone envelope=cloudflare;
        }
        location /client/v4/ {
            clef_systemone envelope=cloudflare;
        }
LOC

# curl -d's form type unless the block says otherwise; every answer is
# JSON with the request id in cf-ray; bodies compare once canonical
add_block_preprocessor(sub {
    my $b = shift;
    $b->set_value(more_headers =>
        "Content-Type: application/x-www-form-urlencoded\n"
        . ($b->more_headers // ''))
        unless ($b->more_headers // '') =~ /^Content-Type:/mi;
    $b->set_value(response_headers_like => <<'H')
Content-Type: application/json
cf-ray: [0-9a-f]{32}
H
        unless defined $b->response_headers_like;
    $b->set_value(response_body_json_sort => 1);
});

run_tests();

__DATA__

=== TEST 1: a noul question, as curl -d sends it
--- request
POST /client/v4/accounts/023e105f4ecef8ad9ca31a8372d0c353/ai/run/@cf/cloudflare/clef-flash
{"model":"clef-flash","state":"Help! My payouts have been failing for 3 days.","questions":{"urgent":{"type":"noul","instructions":"Does this convey urgency?"}}}
--- decide: cloudflare

=== TEST 2: choice and score, sent as application/json
--- request
POST /client/v4/accounts/acct/ai/run/@cf/cloudflare/clef-flash
{"model":"clef-flash","state":"The invoice was charged twice and support never answered.","questions":{"dept":{"type":"choice","instructions":"Which team?","criteria":{"billing":null,"technical":"Bugs, outages","sales":null}},"sev":{"type":"score","instructions":"How severe?","criteria":[{"what":"Cosmetic"},{"what":"Workaround exists"},{"what":"Blocking"}]}}}
--- more_headers
Content-Type: application/json
--- decide: cloudflare

=== TEST 3: the same body on /v1/systemone: the System One form, unwrapped
--- request
POST /v1/systemone
{"model":"clef-flash","state":"Help! My payouts have been failing for 3 days.","questions":{"urgent":{"type":"noul","instructions":"Does this convey urgency?"}}}
--- more_headers
Content-Type: application/json
--- response_headers_like
x-typesafe-request-id: req_[0-9a-f]{32}
--- decide

=== TEST 4: a model this server does not run: 404
--- request
POST /client/v4/accounts/acct/ai/run/@cf/cloudflare/clef-omni
{"model":"clef-omni","state":"x","questions":{"q":{"type":"noul"}}}
--- error_code: 404
--- response_body canon_json
{"result":null,"success":false,"errors":[{"code":404,"message":"No such model: \"@cf/cloudflare/clef-omni\"; this server runs @cf/cloudflare/clef-flash"}],"messages":[]}

=== TEST 5: another model's name under the same path: 404
--- request
POST /client/v4/accounts/acct/ai/run/@cf/cloudflare/clef
{"model":"clef","state":"x","questions":{"q":{"type":"noul"}}}
--- error_code: 404
--- response_body canon_json
{"result":null,"success":false,"errors":[{"code":404,"message":"No such model: \"@cf/cloudflare/clef\"; this server runs @cf/cloudflare/clef-flash"}],"messages":[]}

=== TEST 6: a path that runs no model: 404
--- request
POST /client/v4/accounts/acct/ai/models/search
{}
--- error_code: 404
--- response_body canon_json
{"result":null,"success":false,"errors":[{"code":404,"message":"No route for that URI: the model is named by /client/v4/accounts/{account}/ai/run/@cf/cloudflare/{model}"}],"messages":[]}

=== TEST 7: a schema error (422): its entries as the SDKs print them
--- request
POST /client/v4/accounts/acct/ai/run/@cf/cloudflare/clef-flash
{"model":"clef-flash","state":"x","questions":{"q1":{"type":"boolean","instructions":"x"}}}
--- error_code: 422
--- response_body canon_json
{"result":null,"success":false,"errors":[{"code":422,"message":"questions.q1: Input tag 'boolean' found using 'type' does not match any of the expected tags: 'noul', 'choice', 'score'"}],"messages":[]}

=== TEST 8: a limit (400, a plain detail)
--- request eval
"POST /client/v4/accounts/acct/ai/run/\@cf/cloudflare/clef-flash\n"
. '{"model":"clef-flash","state":"x","questions":{"s":{"type":"score","instructions":"x","criteria":['
. CORE::join(',', map { "\"level $_\"" } 0 .. 10) . ']}}}'
--- error_code: 400
--- response_body canon_json
{"result":null,"success":false,"errors":[{"code":400,"message":"Too many score levels. Must have at most 10 levels."}],"messages":[]}

=== TEST 9: no token where one is required (403, a typed detail)
--- request
POST /keyed/client/v4/accounts/acct/ai/run/@cf/cloudflare/clef-flash
{"model":"clef-flash","state":"x","questions":{"q":{"type":"noul"}}}
--- error_code: 403
--- response_body canon_json
{"result":null,"success":false,"errors":[{"code":403,"message":"Must supply an API key! Check your request and try again."}],"messages":[]}

=== TEST 10: the right token
--- request
POST /keyed/client/v4/accounts/acct/ai/run/@cf/cloudflare/clef-flash
{"model":"clef-flash","state":"Help! My payouts have been failing for 3 days.","questions":{"urgent":{"type":"noul","instructions":"Does this convey urgency?"}}}
--- more_headers
Authorization: Bearer cf-token
--- decide: cloudflare

=== TEST 11: GET (405)
--- request
GET /client/v4/accounts/acct/ai/run/@cf/cloudflare/clef-flash
--- error_code: 405
--- response_body canon_json
{"result":null,"success":false,"errors":[{"code":405,"message":"Method Not Allowed"}],"messages":[]}

=== TEST 12: nginx's own 413 for a body over client_max_body_size, enveloped too
--- request eval
"POST /client/v4/accounts/acct/ai/run/\@cf/cloudflare/clef-flash\n"
. '{"model":"clef-flash","state":"' . ('x' x 3000) . '","questions":{"q":{"type":"noul"}}}'
--- error_code: 413
--- response_body canon_json
{"result":null,"success":false,"errors":[{"code":413,"message":"Request body too large: the limit is 2048 bytes"}],"messages":[]}
