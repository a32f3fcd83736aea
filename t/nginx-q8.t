# clef_model precision=q8 (the CPU's fast mode: int8 activations times the
# file's own blocks) on Clef GGUF files of llama-quantize's Q4_K_M and Q8_0
# (t/fixtures/gguf) served through nginx: the engine says it runs the
# integer products (the backend's line in error.log), and every answer is
# the one `build/clef decide --precision q8` gives for the same body on the
# same file, byte for byte once parsed (the fast mode is deterministic).
# Its tolerance against the reference is test_decide_q8's.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::Base;
use ClefNginx;

filters { body => 'chomp' };

my @files = map { "$FindBin::Bin/fixtures/gguf/gg1.$_.gguf" } qw(q4_k_m q8_0);

plan tests => @files * (2 * blocks() + 2);

for my $file (@files) {
    my $srv = ClefNginx->new(
        model => $file,
        model_opts => 'threads=1 precision=q8',
        workers => 2);
    $srv->start_ready;
    my ($name) = $file =~ m{/([^/]+)$};

    like $srv->log_text, qr/cpu backend: precision q8.*qdot: int8/,
         "$name: the engine logs that its backend runs int8 products";

    for my $b (blocks) {
        my $r = $srv->post_json($b->body);
        is $r->{status}, 200, "$name " . $b->name . ': 200'
            or diag $r->{content};
        is_deeply $r->{json}, $srv->decide($b->body),
                  "$name " . $b->name . ': the answer of clef decide --precision q8'
            or diag $r->{content};
    }

    $srv->stop;
    is_deeply [$srv->bad_log_lines], [],
              "$name: no [alert], [crit] or [emerg] in error.log";
}

__DATA__

=== TEST 1: noul
--- body
{"model": "jev-latest", "state": "Help! My payouts have been failing for 3 days.", "questions": {"urgent": {"type": "noul", "instructions": "Does this convey urgency?"}}}

=== TEST 2: choice and score together
--- body
{"model":"m","state":"The invoice was charged twice and support never answered.","questions":{"dept":{"type":"choice","instructions":"Which team?","criteria":{"billing":null,"technical":"Bugs, outages","sales":null}},"sev":{"type":"score","instructions":"How severe?","criteria":[{"what":"Cosmetic"},{"what":"Workaround exists"},{"what":"Blocking"}]}}}
