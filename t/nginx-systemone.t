# POST /v1/systemone answers: every shape of spec/systemone-protocol.md §9
# (noul, choice with null descriptions, score with object levels, a
# one-level score, 64 questions, JSON state, unicode) equals what
# `build/clef decide` answers for the same body on the same checkpoint.
# Also: Server-Timing, x-typesafe-request-id = req_ + $request_id, and the
# $clef_* variables in the access log.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::Base;
use ClefNginx;

filters { body => 'chomp', shape => 'chomp' };

my $srv = ClefNginx->new(
    model => ClefNginx->model_dir(1),
    workers => 2,
    http_config => <<'LOG');
    log_format clef '$request_id $status $clef_model $clef_input_tokens '
                    '$clef_queue_ms $clef_engine_ms';
    map $uri $clef_logged { /v1/systemone 1; default 0; }
    access_log logs/clef.log clef if=$clef_logged;
LOG
$srv->start_ready;

my $shapes = grep { defined $_->shape } blocks();
plan tests => 4 * blocks() + $shapes + 6;

my @ids;
run {
    my $b = shift;
    my $body = $b->body;
    my $r = $srv->post_json($body);
    is $r->{status}, 200, $b->name . ': 200' or diag $r->{content};
    my $want = $srv->decide($body);
    is_deeply $r->{json}, $want, $b->name . ': the answer of clef decide'
        or diag $r->{content};
    is_deeply [ sort keys %{ $r->{json}{answers} // {} } ],
              [ sort keys %{ ClefNginx->json->decode($body)->{questions} } ],
              $b->name . ': one answer per question';
    like $r->{headers}{'server-timing'} // '',
         qr/^queue;dur=\d+\.\d{3}, engine;dur=\d+\.\d{3}, total;dur=\d+\.\d{3}$/,
         $b->name . ': Server-Timing';
    push @ids, $r->{headers}{'x-typesafe-request-id'};
    if (defined $b->shape) {
        my ($qid, $json) = split /\s+/, $b->shape, 2;
        is_deeply $r->{json}{answers}{$qid}, ClefNginx->json->decode($json),
                  $b->name . ": the answer of $qid is exactly the protocol's";
    }
};

# the access log: one line per request, with the variables filled in
$srv->stop;
my @lines = split /\n/, ClefNginx::slurp($srv->prefix . '/logs/clef.log');
is scalar(@lines), scalar(blocks()), 'one access log line per request';
my @logged = map { 'req_' . (split ' ', $_)[0] } @lines;
is_deeply \@logged, \@ids, 'x-typesafe-request-id is req_ + $request_id';
my @bad = grep { !/^[0-9a-f]{32} 200 clef-tiny \d+ \d+\.\d{3} \d+\.\d{3}$/ }
          @lines;
is_deeply \@bad, [], '$clef_model, $clef_input_tokens, $clef_queue_ms, '
    . '$clef_engine_ms are logged';
my ($tokens) = $lines[0] =~ /^\S+ \S+ \S+ (\d+)/;
ok $tokens > 0, "input tokens of the first request: $tokens";
is_deeply [$srv->bad_log_lines], [], 'no [alert], [crit] or [emerg] in error.log';
unlike $srv->stderr_text, qr/\[(alert|crit|emerg)\]/,
    'nothing alarming on stderr either';

__DATA__

=== TEST 1: minimal noul (example 1)
--- body
{"model":"jev-latest","state":"Help! My payouts have been failing for 3 days.","questions":{"is_urgent":{"type":"noul","instructions":"Does this convey urgency?"}}}

=== TEST 2: choice with null descriptions, as the JS SDK sends it (example 2)
--- body
{"model":"jev-latest","state":"I was charged twice for my plan.","questions":{"dept":{"type":"choice","instructions":"Which team?","criteria":{"billing":null,"technical":"Bugs, outages","sales":null}}}}

=== TEST 3: score with object levels, and a noul with null instructions (example 3)
--- body
{"model":"jev-latest","state":"The export button does nothing in Firefox.","questions":{"sev":{"type":"score","instructions":"How severe?","criteria":[{"what":"Cosmetic"},{"what":"Workaround exists","examples":["fails in one browser"]},{"what":"Blocking"}]},"q":{"type":"noul","instructions":null}}}

=== TEST 4: object state, structured instructions, noul criteria, four options (example 4)
--- body
{"model":"jev-latest","state":{"ticket":{"subject":"Refund?","body":"Charged twice"}},"questions":{"refund":{"type":"noul","instructions":{"question":"Is `ticket` a refund request?"},"criteria":{"true":"asks for money back","false":"anything else"}},"topic":{"type":"choice","instructions":"Topic of `ticket`?","criteria":{"refund":null,"shipping":null,"account":null,"other":null}}}}

=== TEST 5: a one-level score (example 6)
--- body
{"model":"jev-latest","state":"anything","questions":{"one":{"type":"score","instructions":"x","criteria":["only"]}}}
--- shape
one {"type":"score","score":0.0,"legend":{"0":"only"},"probabilities":{"0":1.0},"confidence":1.0}

=== TEST 6: 64 questions of all three kinds
--- body eval
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
ClefNginx->json->encode({ model => 'jev-latest',
    state => 'A long support conversation about many things.',
    questions => \%q });

=== TEST 7: a JSON array state with nested values
--- body
{"model":"jev-latest","state":[{"role":"user","text":"My card was declined"},{"role":"agent","text":"Which card?"},{"amount":12.5,"currency":"EUR","retries":[1,2,3],"ok":false,"note":null}],"questions":{"declined":{"type":"noul","instructions":"Was a payment declined in `state`?"},"mood":{"type":"score","instructions":"Customer mood","criteria":["angry","neutral","happy"]}}}

=== TEST 8: unicode everywhere
--- body
{"model":"jev-latest","state":"Ma commande n° 4521 n'est jamais arrivée 😡 — 注文が届きません. Ünïcödé, Ελληνικά, עברית, café","questions":{"langue":{"type":"choice","instructions":"Quelle langue domine ?","criteria":{"français":"le texte est surtout en français","日本語":null,"ελληνικά":null}},"angry":{"type":"noul","instructions":"Is the customer angry? 🤔"}}}

=== TEST 9: missing instructions and unknown fields are accepted
--- body
{"model":"jev-1.13.0","state":"Where is my parcel?","extra_field":{"ignored":true},"questions":{"where":{"type":"noul","unknown":"ignored"},"kind":{"type":"choice","criteria":{"shipping":null,"billing":null}}}}

=== TEST 10: ten score levels and a 255-option choice (the limits)
--- body eval
ClefNginx->json->encode({ model => 'jev-latest', state => 'limits',
    questions => {
        ten => { type => 'score', instructions => 'ten levels',
                 criteria => [ map { "level $_" } 0 .. 9 ] },
        wide => { type => 'choice', instructions => 'many options',
                  criteria => { map { ("opt$_" => undef) } 1 .. 255 } } } });
