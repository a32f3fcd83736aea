# clef_model ... backend=cpu tp=2 served through nginx: the engine runs two
# rank threads, each holding half of the backbone, and every answer under
# concurrent mixed traffic (several clients, short and long records batched
# together) is the one `clef decide --tp 2` gives for the same body, once
# parsed (tp=2 is deterministic whatever the batch), and exactly the one
# `clef decide --tp 1` (the unsharded model) gives: tp=2 sums every
# row-parallel product in the order of tp=1 (engine/cpu/parallel/rowpar.h), so
# its numbers have the same bits.
# nginx -t accepts tp=2 for cpu and for cuda with devices it divides,
# refuses a tp the model cannot be split by with clef_shard_check's
# message, and keeps refusing devices= for cpu.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use ClefNginx;

my $model = ClefNginx->model_dir(1);
my $json = JSON::PP->new->canonical;

# nginx -t: what tp= may be
for my $case (
    [ 'backend=cpu tp=2', 0, '' ],
    [ 'backend=cuda devices=0-3 tp=2', 0, '' ],
    [ 'backend=cpu tp=3', 1,
      'clef_model "clef-tiny": tp=3 does not divide the 4 attention heads of the model' ],
    [ 'backend=cpu tp=4', 1,
      'clef_model "clef-tiny": tp=4 does not divide the 2 KV heads of the model' ],
    [ 'backend=cpu devices=0 tp=2', 1,
      'clef_model "clef-tiny": devices= applies to a backend with devices (cuda), not to backend=cpu' ],
) {
    my ($opts, $fails, $msg) = @$case;
    my $t = ClefNginx->new(model => $model, model_opts => $opts);
    $t->write_config;
    my ($rc, $out) = $t->run_nginx('-t');
    if ($fails) {
        isnt $rc, 0, "nginx -t refuses $opts";
        like $out, qr/\Q$msg\E/, "$opts: $msg";
    } else {
        is $rc, 0, "nginx -t accepts $opts" or diag $out;
    }
}

# the traffic: short and long records, every question type
my @bodies;
my @states = (
    'Help! My payouts have been failing for 3 days.',
    'The invoice was charged twice and support never answered.',
    'Login works.',
    join(' ', ('The dashboard shows a 502 after every deploy, and the on-call '
               . 'engineer cannot reproduce it locally.') x 40),
    join(' ', ('Refund requested for order 1234 because the parcel arrived '
               . 'damaged and the replacement never shipped.') x 90),
);
for my $i (0 .. $#states) {
    push @bodies, { model => 'm', state => $states[$i], questions => {
        urgent => { type => 'noul', instructions => 'Does this convey urgency?' } } };
    push @bodies, { model => 'm', state => $states[$i], questions => {
        dept => { type => 'choice', instructions => 'Which team?',
                  criteria => { billing => undef, technical => 'Bugs, outages',
                                sales => undef } },
        sev => { type => 'score', instructions => 'How severe?',
                 criteria => [ { what => 'Cosmetic' }, { what => 'Workaround exists' },
                               { what => 'Blocking' } ] } } };
}

# the references: clef decide over every body, unsharded and at tp=2
sub decide_all {
    my ($tp) = @_;
    my $dir = File::Temp::tempdir(CLEANUP => 1);
    open my $fh, '>', "$dir/in.jsonl" or die $!;
    print $fh $json->encode($_), "\n" for @bodies;
    close $fh;
    my $bin = ClefNginx::clef_bin();
    my @out = `"$bin" decide "$model" -t 2 --tp $tp < "$dir/in.jsonl"`;
    die "clef decide --tp $tp failed" if $? || @out != @bodies;
    return [ map { my $a = $json->decode($_); $a->{model} = 'clef-tiny'; $a } @out ];
}
my $tp1 = decide_all(1);
my $tp2 = decide_all(2);
ok !(grep { $json->encode($tp1->[$_]) ne $json->encode($tp2->[$_]) }
      0 .. $#bodies),
   'clef decide --tp 2 answers every body exactly as --tp 1';

my $srv = ClefNginx->new(model => $model, model_opts => 'threads=2 tp=2',
                         workers => 2);
$srv->start_ready;
like $srv->log_text, qr/cpu backend: precision fp32, tensor parallel over 2 ranks/,
     'the engine logs its two ranks';

my $clients = 6;
my $per = 8;
my $res = $srv->parallel($clients, $per, sub {
    my ($c, $i) = @_;
    return $bodies[($c * 7 + $i * 3) % @bodies];
}, 120);
is scalar(@$res), $clients * $per, "$clients clients x $per requests answered";
my ($ok, $same1, $same2) = (0, 0, 0);
for my $r (@$res) {
    my ($c, $i, $status, $content) = @$r;
    my $k = ($c * 7 + $i * 3) % @bodies;
    next unless $status == 200;
    $ok++;
    my $got = eval { $json->decode($content) } or next;
    $same1++ if $json->encode($got) eq $json->encode($tp1->[$k]);
    $same2++ if $json->encode($got) eq $json->encode($tp2->[$k]);
}
is $ok, $clients * $per, 'every request 200';
is $same1, $clients * $per, 'every answer is exactly clef decide --tp 1\'s';
is $same2, $clients * $per, 'every answer is clef decide --tp 2\'s';

$srv->stop;
is_deeply [$srv->bad_log_lines], [], 'no [alert], [crit] or [emerg] in error.log';

done_testing;
