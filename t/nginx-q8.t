# clef_model precision=q8 (the CPU's fast mode: int8 activations times the
# file's own blocks) on a Clef GGUF file of llama-quantize's Q4_K_M
# (t/fixtures/gguf/gg1.q4_k_m.gguf: K types, their Q5_0/Q8_0 fallbacks and
# the converter's reordered value heads) served through nginx: the engine
# says it runs the integer products (the backend's line in error.log), and
# every answer is the one `build/clef decide --precision q8` gives for the
# same body on the same file, byte for byte once parsed (the fast mode is
# deterministic).  Its tolerance against the reference is test_decide_q8's.
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

clef_defaults(model => "$FindBin::Bin/fixtures/gguf/gg1.q4_k_m.gguf",
              model_opts => 'threads=1 precision=q8',
              decide => { precision => 'q8' });

# An engine that loads logs what its backend runs: a fresh nginx's does,
# an engine kept across a reload (TEST_NGINX_USE_HUP) said so before
add_block_preprocessor(sub {
    my $b = shift;
    $b->set_value(more_headers => 'Content-Type: application/json');
    $b->set_value(error_log => qr/cpu backend: precision q8.*qdot: int8/)
        unless $ENV{TEST_NGINX_USE_HUP};
});

run_tests();

__DATA__

=== TEST 1: noul with criteria
--- request
POST /v1/systemone
{"model": "jev-latest", "state": "My card was declined at checkout although my balance is fine, and the order is due today.", "questions": {"urgent": {"type": "noul", "instructions": "Does this need an answer today?", "criteria": {"true": "A deadline or an outage", "false": null}}}}
--- decide

=== TEST 2: three questions on a state object
--- request
POST /v1/systemone
{"model":"m","state":{"subject":"Refund","body":"I was charged twice for the same plan.","tier":"pro"},"questions":{"dept":{"type":"choice","instructions":"Which team?","criteria":{"billing":null,"technical":"Bugs, outages"}},"angry":{"type":"noul","instructions":"Is the customer angry?"},"sev":{"type":"score","instructions":"How severe?","criteria":[{"what":"Cosmetic"},{"what":"Blocking"}]}}}
--- decide
