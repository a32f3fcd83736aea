# The official Python client, typesafe-sdk from PyPI, unmodified, pointed
# at the server: a noul, a choice and a score question, the models list,
# and the SDK's own error classes for a wrong API key and a bad request.
# The SDK goes into a venv under build/ once; without PyPI the suite is
# skipped and says why.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Fcntl qw(:flock);
use File::Path qw(make_path);
use POSIX ();
use ClefNginx;

my $venv = "$ClefNginx::ROOT/build/sdkenv";
my $py = "$venv/bin/python";

# Two runs of the suites in this checkout at once must not both build the
# venv: the second waits for the first, then finds it ready.
make_path("$ClefNginx::ROOT/build");
open my $lock, '>', "$venv.lock" or die "$venv.lock: $!";
flock $lock, LOCK_EX or die "flock $venv.lock: $!";
unless (-x $py && system("'$py' -c 'import typesafe_sdk' 2>/dev/null") == 0) {
    my $out = `python3 -m venv '$venv' 2>&1 && timeout 180 '$venv/bin/pip' install -q 'typesafe-sdk[zstd]' 2>&1`;
    if ($? != 0) {
        $out =~ s/\s+$//;
        plan skip_all => "typesafe-sdk could not be installed from PyPI "
                       . "(unreachable?): " . (split /\n/, $out)[-1];
    }
}
close $lock;

my $srv = ClefNginx->new(model => ClefNginx->model_dir(1), workers => 2,
                         server_config => <<'LOC');
        location /sdk/ {
            clef_api_key sdk-test-key;
            location = /sdk/v1/systemone { clef_systemone; }
            location = /sdk/v1/models { clef_models; }
        }
LOC
$srv->start_ready;

my $script = $srv->prefix . '/tmp/sdk.py';
open my $fh, '>', $script or die $!;
print $fh <<'PY';
import json, os, sys
from typesafe_sdk import (Choice, Noul, Score, TypeSafeClient,
                          TypeSafeAuthenticationError, TypeSafeBadRequestError,
                          RetryPolicy)

base = sys.argv[1]
out = {}
with TypeSafeClient(api_key="sdk-test-key", base_url=base,
                    retry=RetryPolicy(max_retries=0)) as client:
    r = client.system_one(
        state="Help! My payouts have been failing for 3 days.",
        questions={
            "urgent": Noul(instructions="Does this convey urgency?"),
            "team": Choice(instructions="Which team?",
                           criteria={"billing": None,
                                     "technical": "Bugs, outages",
                                     "sales": None}),
            "sev": Score(instructions="How severe?",
                         criteria=[{"what": "Cosmetic"},
                                   {"what": "Workaround exists"},
                                   {"what": "Blocking"}]),
        },
    )
    out["model"] = r.model
    out["usage"] = [r.usage.input_tokens, r.usage.output_tokens]
    out["noul"] = r.nouls["urgent"].noul
    c = r.choices["team"]
    out["choice"] = [c.choice, dict(c.probabilities), c.confidence]
    s = r.scores["sev"]
    out["score"] = [s.score, {str(k): v for k, v in s.probabilities.items()},
                    {str(k): v for k, v in s.legend.items()}, s.confidence]
    out["models"] = [[m.name, m.description, m.release_date]
                     for m in client.models.list().models]

# a body of 1 KiB and more goes out zstd-compressed when the SDK can
from typesafe_sdk._core.compression import COMPRESSORS
long_state = "The export button does nothing. " * 64
with TypeSafeClient(api_key="sdk-test-key", base_url=base,
                    retry=RetryPolicy(max_retries=0)) as client:
    r = client.system_one(state=long_state, questions={
        "bug": Noul(instructions="Is this a bug report?")})
    out["long"] = [r.nouls["bug"].noul, r.usage.input_tokens,
                   "zstd" in COMPRESSORS]

with TypeSafeClient(api_key="wrong-key", base_url=base,
                    retry=RetryPolicy(max_retries=0)) as client:
    try:
        client.models.list()
        out["auth"] = "no error"
    except TypeSafeAuthenticationError as e:
        out["auth"] = type(e).__name__

with TypeSafeClient(api_key="sdk-test-key", base_url=base,
                    retry=RetryPolicy(max_retries=0)) as client:
    try:
        client.system_one(state="x", questions={
            "s": Score(instructions="x", criteria=[str(i) for i in range(11)])})
        out["limit"] = "no error"
    except TypeSafeBadRequestError as e:
        out["limit"] = [type(e).__name__, str(e)]

print(json.dumps(out))
PY
close $fh;

my $res = `'$py' '$script' '@{[ $srv->base ]}/sdk' 2>&1`;
is $?, 0, 'the SDK script ran' or diag $res;
my $got = eval { ClefNginx->json->decode($res) } // {};

# the same request as plain JSON, straight to the server, with the keys in
# the SDK's order (questions are encoded in request order)
my $direct = $srv->post_json('{"state":"Help! My payouts have been failing '
    . 'for 3 days.","model":"jev-latest","questions":{"urgent":{"type":"noul",'
    . '"instructions":"Does this convey urgency?"},"team":{"type":"choice",'
    . '"instructions":"Which team?","criteria":{"billing":null,"technical":'
    . '"Bugs, outages","sales":null}},"sev":{"type":"score","instructions":'
    . '"How severe?","criteria":[{"what":"Cosmetic"},{"what":'
    . '"Workaround exists"},{"what":"Blocking"}]}}}',
    { Authorization => 'Bearer sdk-test-key' })->{json}{answers};

is $got->{model}, 'clef-tiny', 'SDK: the model name';
is $got->{usage}[1], 0, 'SDK: usage parsed (output_tokens)';
ok $got->{usage}[0] > 0, 'SDK: input_tokens';
is $got->{noul}, $direct->{urgent}{noul}, 'SDK: the noul answer';
is_deeply $got->{choice},
    [ $direct->{team}{choice}, $direct->{team}{probabilities},
      $direct->{team}{confidence} ], 'SDK: the choice answer';
is_deeply $got->{score},
    [ $direct->{sev}{score}, $direct->{sev}{probabilities},
      $direct->{sev}{legend}, $direct->{sev}{confidence} ],
    'SDK: the score answer, object levels kept';
my $release = POSIX::strftime('%Y-%m-%d',
    gmtime((stat ClefNginx->model_dir(1) . '/config.json')[9]));
is_deeply $got->{models}, [ [ 'clef-tiny',
    'Clef decision model clef-tiny: 4 layers, hidden size 64, BF16 weights, '
    . 'cpu backend; '
    . 'text, images (PNG, JPEG, WebP) and videos (MP4, MOV, Matroska, WebM)',
    $release ] ], 'SDK: models.list()';
my $long = $srv->post_json('{"state":"' . ('The export button does nothing. '
    x 64) . '","model":"jev-latest","questions":{"bug":{"type":"noul",'
    . '"instructions":"Is this a bug report?"}}}',
    { Authorization => 'Bearer sdk-test-key' })->{json};
is_deeply [ @{ $got->{long} // [] }[0, 1] ],
    [ $long->{answers}{bug}{noul}, $long->{usage}{input_tokens} ],
    'SDK: a long body ' . (($got->{long} // [])->[2] ? '(zstd-compressed) '
    : '(uncompressed: no zstd here) ') . 'is answered the same';
is $got->{auth}, 'TypeSafeAuthenticationError',
    'SDK: a wrong key raises its authentication error';
is $got->{limit}[0], 'TypeSafeBadRequestError', 'SDK: 400 raises BadRequest';
like $got->{limit}[1] // '', qr/Too many score levels\. Must have at most 10 levels\./,
    'SDK: with the server\'s message';

$srv->stop;
is_deeply [$srv->bad_log_lines], [], 'no [alert], [crit] or [emerg] in error.log';

done_testing;
