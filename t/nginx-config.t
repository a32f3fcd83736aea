# nginx -t and the directives: the packaged nginx loads the module, a good
# model validates (headers only, nothing started), a bad path or a
# directory that is not a decision model fails with a clear message, and
# misused directives are refused.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::Base;
use ClefNginx;

filters { http => 'chomp', server => 'chomp', error => 'chomp' };

my $model = ClefNginx->model_dir(1);
my $notmodel = ClefNginx->new->prefix . '/not-a-model';
mkdir $notmodel;
open my $fh, '>', "$notmodel/config.json";
print $fh "{}\n";
close $fh;

# GGUF files: llama.cpp's, a plain Qwen3.5 one (converted before llama.cpp
# had Clef support: only its headers matter to nginx -t) and one holding a
# tensor type ngx_clef does not read, written here
my $gguf = "$ClefNginx::ROOT/t/fixtures/gguf";
my $qwen35 = ClefNginx->new->prefix . '/qwen35.gguf';
my $iq2 = ClefNginx->new->prefix . '/iq2.gguf';

sub gguf_str { my $s = shift; return pack('Q<', length $s) . $s }

sub write_gguf {
    my ($path, $arch, @tensors) = @_;
    my $b = 'GGUF' . pack('L<Q<Q<', 3, scalar @tensors, 1)
          . gguf_str('general.architecture') . pack('L<', 8) . gguf_str($arch);
    my $data = '';
    for my $t (@tensors) {
        my ($name, $type, $bytes, @ne) = @$t;
        $b .= gguf_str($name) . pack('L<', scalar @ne) . pack('Q<*', @ne)
            . pack('L<Q<', $type, length $data);
        $data .= "\0" x $bytes;
    }
    $b .= "\0" x ((32 - length($b) % 32) % 32);
    open my $fh, '>:raw', $path or die "$path: $!";
    print $fh $b . $data;
    close $fh;
}
write_gguf($qwen35, 'qwen35');
# IQ2_XXS (GGML type 16): 66 bytes per block of 256
write_gguf($iq2, 'clef', [ 'blk.0.ffn_down.weight', 16, 132, 256, 2 ]);

plan tests => 2 * blocks() + 7;

# the module alone loads into the packaged binary
{
    my $srv = ClefNginx->new;
    $srv->write_config;
    my ($rc, $out) = $srv->run_nginx('-t');
    is $rc, 0, 'load_module: the packaged nginx accepts the module'
        or diag $out;
}

# a valid configuration: -t succeeds and starts no keeper or engine.  Other
# nginx instances with the module may run on the host (another checkout's
# suites, a `make run`): only this test's own process tree is looked at.
# As a subreaper the test inherits whatever `nginx -t` would leave behind,
# running or exited, so any process new in its tree is one nginx -t made.
{
    my $srv = ClefNginx->new(model => $model, workers => 2);
    $srv->write_config;
    my $reaper = ClefNginx->subreaper;
    my %before = map { $_ => 1 } ClefNginx->descendants_of($$);
    my ($rc, $out) = $srv->run_nginx('-t');
    is $rc, 0, 'nginx -t with a tiny model succeeds' or diag $out;
    SKIP: {
        skip 'prctl(PR_SET_CHILD_SUBREAPER) refused', 1 unless $reaper;
        my @left = map { "$_ " . (ClefNginx->cmdline($_) || '(exited)') }
                   grep { !$before{$_} } ClefNginx->descendants_of($$);
        is_deeply \@left, [], 'nginx -t starts no keeper and no engine';
    }
    unlike $out . $srv->log_text, qr/clef: started keeper/,
           'and says so in no log line';
}

# conf/edge.conf (TLS, HTTP/2, limit_req, API keys) is a valid config once
# its paths point at this machine
{
    my $srv = ClefNginx->new;
    my $p = $srv->prefix;
    system("openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost "
         . "-keyout $p/conf/key.pem -out $p/conf/cert.pem -days 1 "
         . ">/dev/null 2>&1") == 0 or die "openssl failed";
    my $conf = ClefNginx::slurp("$ClefNginx::ROOT/conf/edge.conf");
    my ($tls, $metrics) = (ClefNginx::free_port(), ClefNginx::free_port());
    my $module = ClefNginx::module_path();
    $conf =~ s{/usr/lib/nginx/modules/ngx_http_clef_module\.so}{$module};
    $conf =~ s{/srv/models/clef-flash}{$model};
    $conf =~ s{/etc/ssl/clef/fullchain\.pem}{$p/conf/cert.pem};
    $conf =~ s{/etc/ssl/clef/privkey\.pem}{$p/conf/key.pem};
    $conf =~ s{/run/nginx-clef\.pid}{$p/logs/nginx.pid};
    $conf =~ s{/var/log/nginx/}{$p/logs/}g;
    $conf =~ s{listen 443 }{listen 127.0.0.1:$tls };
    $conf =~ s{127\.0\.0\.1:9145}{127.0.0.1:$metrics};
    $conf =~ s{\n(events)}{\nuser nobody nogroup;\n$1} if $> == 0;
    open my $fh, '>', "$p/conf/nginx.conf" or die $!;
    print $fh $conf;
    close $fh;
    my ($rc, $out) = $srv->run_nginx('-t');
    is $rc, 0, 'conf/edge.conf passes nginx -t' or diag $out;
}

# a Clef GGUF made by llama.cpp's tools, with its mmproj: -t reads their
# headers and succeeds
for my $conf ("clef_model tiny $gguf/gg1.q4_k_m.gguf;",
              "clef_model tiny $gguf/gg1.f16.gguf mmproj=$gguf/gg1.mmproj.gguf;")
{
    my $srv = ClefNginx->new(http_config => $conf);
    $srv->write_config;
    my ($rc, $out) = $srv->run_nginx('-t');
    is $rc, 0, "nginx -t accepts $conf" or diag $out;
}

run {
    my $b = shift;
    my $http = $b->http // '';
    my $server = $b->server // '';
    $http =~ s/NOTMODEL/$notmodel/g;
    $http =~ s/\bMODEL\b/$model/g;
    $http =~ s/QWEN35/$qwen35/g;
    $http =~ s/IQ2/$iq2/g;
    $http =~ s/GGUF/$gguf/g;
    my $srv = ClefNginx->new(http_config => $http, server_config => $server);
    $srv->write_config;
    my ($rc, $out) = $srv->run_nginx('-t');
    isnt $rc, 0, $b->name . ': nginx -t fails';
    my $want = $b->error;
    $want =~ s/NOTMODEL/$notmodel/g;
    like $out, qr/\Q$want\E/, $b->name . ': with a clear message';
};

__DATA__

=== TEST 1: a model path that does not exist
--- http
clef_model tiny /nonexistent/model/dir;
--- error
clef_model "tiny": cannot open "/nonexistent/model/dir" (2: No such file or directory)

=== TEST 2: a directory that is not a decision model
--- http
clef_model tiny NOTMODEL;
--- error
clef_model "tiny" in "NOTMODEL": 

=== TEST 3: a file instead of a directory
--- http
clef_model tiny /etc/hostname;
--- error
is not a directory

=== TEST 3a: a plain Qwen3.5 GGUF: no joint head, and what to do
--- http
clef_model tiny QWEN35;
--- error
(general.architecture "qwen35", converted before llama.cpp had Clef support): it has no joint schema head.  Use a Clef GGUF (general.architecture "clef", e.g. ggml-org's Clef-Flash-GGUF), or convert the Clef release with a current llama.cpp's convert_hf_to_gguf.py

=== TEST 3b: a GGUF tensor of a type ngx_clef does not read: named with its tensor
--- http
clef_model tiny IQ2;
--- error
tensor 'blk.0.ffn_down.weight' is of type IQ2_XXS, which ngx_clef does not read

=== TEST 3c: an mmproj file given as the model
--- http
clef_model tiny GGUF/gg1.mmproj.gguf;
--- error
is a vision projector (mmproj) file, not the model: give the model's GGUF, and this file as its mmproj

=== TEST 4: unknown backend
--- http
clef_model tiny MODEL backend=tpu;
--- error
unknown backend "tpu" (known: cpu, cuda)

=== TEST 4b: unknown precision
--- http
clef_model tiny MODEL precision=fp16;
--- error
invalid "precision=fp16": precision is fp32 or bf16

=== TEST 4c: fp32 on the CUDA backend, which computes in bf16
--- http
clef_model tiny MODEL backend=cuda precision=fp32;
--- error
clef_model "tiny": precision=fp32 is for backend=cpu; the CUDA backend computes in bf16

=== TEST 5: unknown clef_model parameter
--- http
clef_model tiny MODEL speed=fast;
--- error
invalid parameter "speed=fast"

=== TEST 6: a tp the model cannot be split by (the tiny shape has 4 attention heads)
--- http
clef_model tiny MODEL backend=cpu tp=3;
--- error
clef_model "tiny": tp=3 does not divide the 4 attention heads of the model

=== TEST 6a: the same on CUDA, once tp divides the devices
--- http
clef_model tiny MODEL backend=cuda devices=0-5 tp=3;
--- error
clef_model "tiny": tp=3 does not divide the 4 attention heads of the model

=== TEST 6b: tp that does not divide the devices
--- http
clef_model tiny MODEL backend=cuda devices=0,1,2 tp=2;
--- error
clef_model "tiny": tp=2 must divide the 3 devices of devices= into replicas

=== TEST 6b2: tp on CUDA without a device list
--- http
clef_model tiny MODEL backend=cuda tp=2;
--- error
clef_model "tiny": tp=2 needs devices= naming the GPUs to split over (e.g. devices=0-1)

=== TEST 6c: a device named twice
--- http
clef_model tiny MODEL backend=cuda devices=0-2,1;
--- error
"devices=0-2,1" names device 1 twice

=== TEST 6d: a bad device list
--- http
clef_model tiny MODEL backend=cuda devices=3-1;
--- error
invalid "devices=3-1": a list of device numbers and ranges such as 0-7 or 0,2,4-5

=== TEST 6e: devices for the CPU backend
--- http
clef_model tiny MODEL devices=0;
--- error
clef_model "tiny": devices= applies to a backend with devices (cuda), not to backend=cpu

=== TEST 6f: devices for the CPU backend, with tp
--- http
clef_model tiny MODEL backend=cpu devices=0-1 tp=2;
--- error
clef_model "tiny": devices= applies to a backend with devices (cuda), not to backend=cpu

=== TEST 7: two models in one http block
--- http
clef_model a MODEL;
clef_model b MODEL;
--- error
"clef_model" directive is duplicate: one model per http block

=== TEST 8: clef_engine without a zone
--- http
clef_model tiny MODEL;
clef_engine max_queue=10;
--- error
"clef_engine" must have "zone=NAME:SIZE"

=== TEST 9: a zone below 1m
--- http
clef_model tiny MODEL;
clef_engine zone=clef:64k;
--- error
zone "zone=clef:64k" is too small: at least 1m

=== TEST 10: max_queue beyond the zone's slots
--- http
clef_model tiny MODEL;
clef_engine zone=clef:1m max_queue=100000;
--- error
clef_engine max_queue=100000 needs more slots than a zone of 1048576 bytes has (64)

=== TEST 11: clef_engine without a model
--- http
clef_engine zone=clef:8m;
--- error
"clef_engine" needs a "clef_model"

=== TEST 12: clef_systemone without a model
--- server
location = /v1/systemone { clef_systemone; }
--- error
"clef_systemone" and "clef_models" need a "clef_model" at the http level

=== TEST 13: bad timeout
--- http
clef_model tiny MODEL;
clef_engine zone=clef:8m timeout=soon;
--- error
invalid parameter "timeout=soon"

=== TEST 14: clef_max_questions below 1
--- http
clef_model tiny MODEL;
clef_max_questions 0;
--- server
location = /v1/systemone { clef_systemone; }
--- error
clef_max_questions and clef_max_tokens must be at least 1
