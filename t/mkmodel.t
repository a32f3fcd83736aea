#!/usr/bin/perl
# clef mkmodel is deterministic: the fixture checkpoints of t/fixtures/models
# regenerate to the very bytes recorded in <name>.sha256 (sha256sum format,
# one line per file the command writes).
#
#   prove t/mkmodel.t            (from the repository root, after make)
#
# The tokenizer is the repository's copy of Qwen3's (t/fixtures/tokenizer/
# qwen3): the recorded hashes cover tokenizer.json and tokenizer_config.json,
# which mkmodel copies as they are.
use strict;
use warnings;
use File::Temp qw(tempdir);
use Test::More;

my $clef = 'build/clef';
my $tokenizer = 't/fixtures/tokenizer/qwen3';
my $fixtures = 't/fixtures/models';

plan skip_all => "$clef is not built" unless -x $clef;
# part of the repository: missing means a broken checkout, not a skip
-f "$tokenizer/tokenizer.json" or BAIL_OUT("no $tokenizer/tokenizer.json");

# name => [seed, shards, tokenizer]; t/fixtures/models/README.md says the
# same.  omni1 (Clef Omni) is made with Qwen3-Omni's added tokens.
my @models = ([r2 => 2, 2], [r3 => 3, 1], [v1 => 11, 2],
              [omni1 => 21, 2, 't/fixtures/tokenizer/qwen3-omni']);

my $tmp = tempdir('clef_mkmodel_XXXXXX', TMPDIR => 1, CLEANUP => 1);

sub lines {
    my ($file) = @_;
    open my $fh, '<', $file or die "$file: $!";
    my @l = <$fh>;
    return @l;
}

for my $m (@models) {
    my ($name, $seed, $shards, $tk) = @$m;
    my $out = "$tmp/$name";
    $tk //= $tokenizer;
    my $log = `$clef mkmodel --config $fixtures/$name.json --tokenizer $tk --seed $seed --out $out --shards $shards 2>&1`;
    is($?, 0, "$name: mkmodel exits 0") or diag($log);

    my @want = lines("$fixtures/$name.sha256");
    my @got = `cd $out && sha256sum * 2>&1`;
    is(scalar(@got), scalar(@want), "$name: writes " . scalar(@want) . " files");
    my %got = map { my ($h, $f) = split ' ', $_; ($f => $h) } @got;
    for (@want) {
        my ($h, $f) = split ' ';
        is($got{$f}, $h, "$name: $f has the recorded sha256");
    }
}

# Arguments are checked before anything is written.
my $err = `$clef mkmodel --shape nope --tokenizer $tokenizer --seed 1 --out $tmp/x 2>&1`;
is($? >> 8, 2, 'unknown shape: exit status 2');
like($err, qr/^clef mkmodel: unknown shape 'nope'$/m, 'unknown shape: message');
ok(!-e "$tmp/x", 'unknown shape: nothing written');

$err = `$clef mkmodel --shape tiny --tokenizer $tokenizer --out $tmp/x 2>&1`;
is($? >> 8, 2, 'missing --seed: exit status 2');
like($err, qr/^usage: clef mkmodel/m, 'missing --seed: usage');

$err = `$clef mkmodel --shape tiny --shards 0 --tokenizer $tokenizer --seed 1 --out $tmp/x 2>&1`;
like($err, qr/^clef mkmodel: --shards '0' is not an integer in \[1, 99999\]$/m,
     '--shards 0 refused');

open my $cfg, '>', "$tmp/bad.json" or die;
print $cfg '{"hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 1,'
  . ' "layer_types": ["sliding_attention"], "num_attention_heads": 1,'
  . ' "num_key_value_heads": 1, "head_dim": 8, "linear_num_key_heads": 1,'
  . ' "linear_num_value_heads": 1, "linear_key_head_dim": 8,'
  . ' "linear_value_head_dim": 8, "linear_conv_kernel_dim": 4,'
  . ' "head": {"width": 8, "routing_layers": 1, "layers": 1, "heads": 1,'
  . ' "feedforward": 8}}';
close $cfg;
$err = `$clef mkmodel --config $tmp/bad.json --tokenizer $tokenizer --seed 1 --out $tmp/x 2>&1`;
is($? >> 8, 1, 'bad layer type: exit status 1');
like($err, qr/^clef mkmodel: config: text_config\.layer_types\[0\] is 'sliding_attention', expected linear_attention or full_attention$/m,
     'bad layer type: the loader\'s message');

done_testing();
