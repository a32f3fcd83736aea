# POST /v1/systemone answers: every shape of docs/spec/protocol.md §9
# (noul, choice with null descriptions, score with object levels, a
# one-level score, 64 questions, JSON state, unicode) equals what
# `build/clef decide` answers for the same body on the same checkpoint.
# Also: Server-Timing, x-typesafe-request-id = req_ + $request_id, and the
# $clef_* variables in the access log.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClefTest;
use Test::Nginx::Socket 'no_plan';

master_on();
workers(2);
repeat_each(2);

clef_defaults(model => ClefModels->model_dir(1), http => <<'LOG');
    log_format clef 'req_$request_id $sent_http_x_typesafe_request_id '
                    '$status $clef_model $clef_input_tokens '
                    '$clef_queue_ms $clef_engine_ms';
LOG

# every answer: JSON, timed, with the request id the access log has
add_block_preprocessor(sub {
    my $b = shift;
    $b->set_value(more_headers => 'Content-Type: application/json');
    $b->set_value(response_headers_like => <<'H');
Content-Type: ^application/json$
Server-Timing: ^queue;dur=\d+\.\d{3}, engine;dur=\d+\.\d{3}, total;dur=\d+\.\d{3}$
x-typesafe-request-id: ^req_[0-9a-f]{32}$
H
    $b->set_value(config => <<'LOC');
        location = /v1/systemone {
            access_log logs/access.log clef;
            clef_systemone;
        }
LOC
    $b->set_value(access_log => qr/^(req_[0-9a-f]{32}) \1 200 clef-tiny [1-9]\d* \d+\.\d{3} \d+\.\d{3}$/);
});

# --- shape: "QID JSON", the answer of QID exactly as the protocol writes it
add_response_body_check(sub {
    my ($b, $body) = @_;
    return unless defined $b->shape;
    my ($qid, $want) = split ' ', $b->shape, 2;
    my $got = eval { ClefModels->json->decode($body)->{answers}{$qid} };
    is_deeply $got, ClefModels->json->decode($want),
              $b->name . ": the answer of $qid is exactly the protocol's";
});

run_tests();

__DATA__

=== TEST 1: minimal noul (example 1)
--- request
POST /v1/systemone
{"model":"jev-latest","state":"Help! My payouts have been failing for 3 days.","questions":{"is_urgent":{"type":"noul","instructions":"Does this convey urgency?"}}}
--- decide

=== TEST 2: choice with null descriptions, as the JS SDK sends it (example 2)
--- request
POST /v1/systemone
{"model":"jev-latest","state":"I was charged twice for my plan.","questions":{"dept":{"type":"choice","instructions":"Which team?","criteria":{"billing":null,"technical":"Bugs, outages","sales":null}}}}
--- decide

=== TEST 3: score with object levels, and a noul with null instructions (example 3)
--- request
POST /v1/systemone
{"model":"jev-latest","state":"The export button does nothing in Firefox.","questions":{"sev":{"type":"score","instructions":"How severe?","criteria":[{"what":"Cosmetic"},{"what":"Workaround exists","examples":["fails in one browser"]},{"what":"Blocking"}]},"q":{"type":"noul","instructions":null}}}
--- decide

=== TEST 4: object state, structured instructions, noul criteria, four options (example 4)
--- request
POST /v1/systemone
{"model":"jev-latest","state":{"ticket":{"subject":"Refund?","body":"Charged twice"}},"questions":{"refund":{"type":"noul","instructions":{"question":"Is `ticket` a refund request?"},"criteria":{"true":"asks for money back","false":"anything else"}},"topic":{"type":"choice","instructions":"Topic of `ticket`?","criteria":{"refund":null,"shipping":null,"account":null,"other":null}}}}
--- decide

=== TEST 5: a one-level score (example 6)
--- request
POST /v1/systemone
{"model":"jev-latest","state":"anything","questions":{"one":{"type":"score","instructions":"x","criteria":["only"]}}}
--- decide
--- shape
one {"type":"score","score":0.0,"legend":{"0":"only"},"probabilities":{"0":1.0},"confidence":1.0}

=== TEST 6: 64 questions of all three kinds
--- request eval
"POST /v1/systemone\n" . do {
my %q;
for my $i (1 .. 64) {
    $q{sprintf 'q%02d', $i} =
          $i % 3 == 0 ? { type => 'noul', instructions => "Is it about topic $i?" }
        : $i % 3 == 1 ? { type => 'choice', instructions => "Pick for $i",
                          criteria => { red => undef, green => 'the colour of grass',
                                        blue => undef } }
        :               { type => 'score', instructions => "Rate $i",
                          criteria => [ 'low', 'mid', 'high', 'extreme' ] };
}
ClefModels->json->encode({ model => 'jev-latest',
    state => 'A long support conversation about many things.',
    questions => \%q });
}
--- decide

=== TEST 7: a JSON array state with nested values
--- request
POST /v1/systemone
{"model":"jev-latest","state":[{"role":"user","text":"My card was declined"},{"role":"agent","text":"Which card?"},{"amount":12.5,"currency":"EUR","retries":[1,2,3],"ok":false,"note":null}],"questions":{"declined":{"type":"noul","instructions":"Was a payment declined in `state`?"},"mood":{"type":"score","instructions":"Customer mood","criteria":["angry","neutral","happy"]}}}
--- decide

=== TEST 8: unicode everywhere
--- request
POST /v1/systemone
{"model":"jev-latest","state":"Ma commande n° 4521 n'est jamais arrivée 😡 — 注文が届きません. Ünïcödé, Ελληνικά, עברית, café","questions":{"langue":{"type":"choice","instructions":"Quelle langue domine ?","criteria":{"français":"le texte est surtout en français","日本語":null,"ελληνικά":null}},"angry":{"type":"noul","instructions":"Is the customer angry? 🤔"}}}
--- decide

=== TEST 9: missing instructions and unknown fields are accepted
--- request
POST /v1/systemone
{"model":"jev-1.13.0","state":"Where is my parcel?","extra_field":{"ignored":true},"questions":{"where":{"type":"noul","unknown":"ignored"},"kind":{"type":"choice","criteria":{"shipping":null,"billing":null}}}}
--- decide

=== TEST 10: ten score levels and a 255-option choice (the limits)
--- request eval
"POST /v1/systemone\n" . ClefModels->json->encode({ model => 'jev-latest', state => 'limits',
    questions => {
        ten => { type => 'score', instructions => 'ten levels',
                 criteria => [ map { "level $_" } 0 .. 9 ] },
        wide => { type => 'choice', instructions => 'many options',
                  criteria => { map { ("opt$_" => undef) } 1 .. 255 } } } });
--- decide
