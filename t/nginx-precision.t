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
use ClefTest;
use Test::Nginx::Socket 'no_plan';

master_on();
workers(2);
repeat_each(2);
check_accum_error_log();   # a repeated request reads the log from its start

clef_defaults(model => ClefModels->model_dir(1),
              model_opts => 'threads=1 precision=bf16',
              decide => { precision => 'bf16' });

# An engine that loads logs what its backend runs: a fresh nginx's does,
# an engine kept across a reload (TEST_NGINX_USE_HUP) said so before
add_block_preprocessor(sub {
    my $b = shift;
    $b->set_value(more_headers => 'Content-Type: application/json');
    $b->set_value(error_log => 'cpu backend: precision bf16')
        unless $ENV{TEST_NGINX_USE_HUP};
});

run_tests();

__DATA__

=== TEST 1: noul
--- request
POST /v1/systemone
{"model": "jev-latest", "state": "Help! My payouts have been failing for 3 days.", "questions": {"urgent": {"type": "noul", "instructions": "Does this convey urgency?"}}}
--- decide

=== TEST 2: choice and score together
--- request
POST /v1/systemone
{"model":"m","state":"The invoice was charged twice and support never answered.","questions":{"dept":{"type":"choice","instructions":"Which team?","criteria":{"billing":null,"technical":"Bugs, outages","sales":null}},"sev":{"type":"score","instructions":"How severe?","criteria":[{"what":"Cosmetic"},{"what":"Workaround exists"},{"what":"Blocking"}]}}}
--- decide
