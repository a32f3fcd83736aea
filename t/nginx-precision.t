# clef_model precision=bf16 served through nginx: the engine says it runs
# bf16 products (the backend's line in error.log), and every answer is the
# one `build/clef decide --precision bf16` gives for the same body on the
# same checkpoint, byte for byte once parsed (the bf16 path is as
# deterministic as the fp32 one).  The tolerance of bf16 against the
# reference is test_decide_e2e's.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::Base;
use ClefNginx;

filters { body => 'chomp' };

my $srv = ClefNginx->new(
    model => ClefNginx->model_dir(1),
    model_opts => 'threads=1 precision=bf16',
    workers => 2);
$srv->start_ready;

plan tests => 2 * blocks() + 2;

like $srv->log_text, qr/cpu backend: precision bf16/,
     'the engine logs that its backend runs bf16 products';

run {
    my $b = shift;
    my $r = $srv->post_json($b->body);
    is $r->{status}, 200, $b->name . ': 200' or diag $r->{content};
    is_deeply $r->{json}, $srv->decide($b->body),
              $b->name . ': the answer of clef decide --precision bf16'
        or diag $r->{content};
};

$srv->stop;
is_deeply [$srv->bad_log_lines], [], 'no [alert], [crit] or [emerg] in error.log';

__DATA__

=== TEST 1: noul
--- body
{"model": "jev-latest", "state": "Help! My payouts have been failing for 3 days.", "questions": {"urgent": {"type": "noul", "instructions": "Does this convey urgency?"}}}

=== TEST 2: choice and score together
--- body
{"model":"m","state":"The invoice was charged twice and support never answered.","questions":{"dept":{"type":"choice","instructions":"Which team?","criteria":{"billing":null,"technical":"Bugs, outages","sales":null}},"sev":{"type":"score","instructions":"How severe?","criteria":[{"what":"Cosmetic"},{"what":"Workaround exists"},{"what":"Blocking"}]}}}
