package ClefModels;

# What every nginx suite needs besides nginx: the module and build/clef of
# this tree, the tiny checkpoints `clef mkmodel` makes (made once into
# build/t/ and shared by the suites), and the reference answer of
# `clef decide` for a body.  Used by the Test::Nginx suites (ClefTest.pm)
# and by the harness of the load, fault and cluster suites (ClefNginx.pm).
#
# Environment: CLEF_MODULE (the .so), CLEF_BIN (build/clef), CLEF_TOKENIZER
# (another tokenizer for the fixture models than t/fixtures/tokenizer/qwen3).

use strict;
use warnings;
use Carp qw(croak);
use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Path qw(make_path remove_tree);
use File::Temp qw(tempdir tempfile);
use IO::Socket::INET;
use JSON::PP ();
use POSIX ();

our $ROOT = abs_path(dirname(__FILE__) . '/../..');

sub module_path {
    return $ENV{CLEF_MODULE} || "$ROOT/build/ngx_http_clef_module.so";
}

sub clef_bin {
    return $ENV{CLEF_BIN} || "$ROOT/build/clef";
}

# The repository's copy of the Qwen3 tokenizer: a clone needs nothing
# beside it.
sub tokenizer_dir {
    my $dir = $ENV{CLEF_TOKENIZER} || "$ROOT/t/fixtures/tokenizer/qwen3";
    croak "no tokenizer.json in $dir" unless -f "$dir/tokenizer.json";
    return $dir;
}

# build/t/NAME: the checkpoint `clef mkmodel ARGS` makes, made once;
# made in a temporary directory and renamed, so that suites run in
# parallel never see half of one.
sub made_model {
    my ($name, $args, $tokenizer) = @_;
    my $dir = "$ROOT/build/t/$name";
    return $dir if -f "$dir/joint_head_config.json";
    make_path("$ROOT/build/t");
    my $tmp = tempdir("$name-XXXXXX", DIR => "$ROOT/build/t");
    my $bin = clef_bin();
    my $tok = $tokenizer // tokenizer_dir();
    my $out = `"$bin" mkmodel $args --tokenizer "$tok" --out "$tmp/m" 2>&1`;
    croak "clef mkmodel failed:\n$out" if $?;
    chmod 0755, $tmp, "$tmp/m";
    rename "$tmp/m", $dir or -f "$dir/joint_head_config.json"
        or croak "rename $tmp/m: $!";
    remove_tree($tmp);
    return $dir;
}

# A tiny random checkpoint, one per seed.  With a vision tower, unless
# $text_only (a model that takes no images).
sub model_dir {
    my ($class, $seed, $text_only) = @_;
    $seed //= 1;
    return made_model("nginx-model-$seed" . ($text_only ? '-text' : ''),
                      "--shape tiny --seed $seed"
                      . ($text_only ? ' --text-only' : ''));
}

# The checkpoint of the image fixtures (t/fixtures/models/v1.json, seed 11,
# 2 shards: t/fixtures/vision was computed on it).
sub vision_model_dir {
    return made_model("nginx-model-v1",
        qq{--config "$ROOT/t/fixtures/models/v1.json" --seed 11 --shards 2});
}

# The Clef Omni checkpoint of the e2e fixtures (t/fixtures/models/
# omni1.json, seed 21, 2 shards, Qwen3's tokenizer with Qwen3-Omni's added
# tokens: t/fixtures/e2e/omni1.jsonl was computed on it).
sub omni_model_dir {
    return made_model("nginx-model-omni1",
        qq{--config "$ROOT/t/fixtures/models/omni1.json" --seed 21 --shards 2},
        "$ROOT/t/fixtures/tokenizer/qwen3-omni");
}

# A loopback port that nobody listens on now, taken below the kernel's
# ephemeral range (from which every client socket gets its local port, so
# the many client connections of a concurrent suite cannot take it before
# nginx binds it).  Two suites may still draw the same port: the caller
# tries another when nginx cannot bind it.
sub free_port {
    open my $fh, '<', '/proc/sys/net/ipv4/ip_local_port_range';
    my ($lo) = split ' ', (<$fh> // '');
    my $range = ($lo // 0) > 11000 ? [10000, $lo - 1] : undef;
    for (1 .. 100) {
        my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
            LocalPort => $range
                ? $range->[0] + int rand($range->[1] - $range->[0]) : 0,
            Proto => 'tcp', Listen => 1, ReuseAddr => 1) or next;
        my $p = $s->sockport;
        close $s;
        return $p;
    }
    croak "cannot find a free loopback port: $!";
}

# Loads $module (Test::Nginx::Socket, Test::Nginx::Util): a system
# install, else the copy in ../shared/vendor/test-nginx beside the
# repository (what `make test` passes to prove with -I); without either,
# dies saying so: the nginx suites never skip for want of it.
sub require_test_nginx {
    my ($module) = @_;
    (my $file = "$module.pm") =~ s{::}{/}g;
    return 1 if eval { require $file; 1 };
    # a copy that is there but does not load (a missing dependency) says why
    die $@ unless $@ =~ /^Can't locate \Q$file\E /;
    my $vendor = "$ROOT/../shared/vendor/test-nginx/lib";
    -f "$vendor/$file" or die <<"EOT";
$module is not installed, and there is no copy of it in
$vendor.
Install it (cpanm Test::Nginx) or run `auto/deps`; the nginx suites cannot
run without it.
EOT
    unshift @INC, $vendor;
    require $file;
    return 1;
}

# Makes the calling process the reaper of its orphaned descendants
# (prctl PR_SET_CHILD_SUBREAPER): a daemonised nginx master, or a keeper
# whose nginx has exited, is reparented to the test, not to init, so it
# is reaped as soon as it exits (init may take its time: meanwhile
# kill(pid, 0) still finds the zombie) and is never mistaken for another
# nginx's process.  False where the kernel refuses.
sub subreaper {
    my $nr = eval { require 'syscall.ph'; &SYS_prctl() };
    return defined $nr && syscall($nr, 36, 1, 0, 0, 0) == 0;
}

# Reaps whatever of the reparented descendants has exited.
sub reap {
    1 while waitpid(-1, POSIX::WNOHANG()) > 0;
}

my $json = JSON::PP->new->canonical;
sub json { $json }

# What `build/clef decide` answers for $body on $model: one request at a
# time, one thread, as a threads=1 engine runs it; %o: precision, tp,
# mmproj (a GGUF model's towers), and name (the model name the server
# reports: decide echoes the request's).
sub decide {
    my ($class, $model, $body, %o) = @_;
    my $flags = '';
    $flags .= " --precision $o{precision}" if $o{precision};
    $flags .= " --tp $o{tp}" if $o{tp};
    $flags .= qq{ --mmproj "$o{mmproj}"} if $o{mmproj};
    $body = $json->encode($body) if ref $body;
    $body =~ s/\n/ /g;
    my ($fh, $f) = tempfile('decide-XXXXXX', TMPDIR => 1, UNLINK => 1);
    print $fh "$body\n";
    close $fh;
    my $bin = clef_bin();
    my $out = `"$bin" decide "$model" -t 1$flags < "$f" 2>&1`;
    croak "clef decide failed:\n$out" if $?;
    my $want = $json->decode($out);
    croak "clef decide refused the request: $out" if $want->{error};
    $want->{model} = $o{name} if defined $o{name};
    return $want;
}

1;
