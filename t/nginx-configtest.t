# nginx -t: the packaged nginx loads the module, a good model validates
# (headers only, nothing started), and the shipped conf/edge.conf passes.
# On the harness (ClefNginx.pm), not Test::Nginx: Test::Nginx starts nginx,
# it never runs `nginx -t`, and what is asserted here is what -t leaves
# behind.  (The refusals of bad directives: t/nginx-config.t.)
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use ClefNginx;

my $model = ClefNginx->model_dir(1);

plan tests => 15;

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

# a Clef GGUF made by llama.cpp's tools, alone and with its mmproj: -t
# reads their headers and succeeds, and says the precision the model will
# compute at and why (the default differs with how the weights are stored)
my $gguf = "$FindBin::Bin/fixtures/gguf";
my $q8why = 'the default for block-quantized weights: integer products, '
          . 'within 5e-2 of the exact ones; precision=fp32 computes exactly';
for my $t (["clef_model tiny $gguf/gg1.q4_k_m.gguf;",
            "Q4_K_M weights, backend=cpu computes at precision q8 ($q8why)"],
           ["clef_model tiny $gguf/gg1.f16.gguf mmproj=$gguf/gg1.mmproj.gguf;",
            'F16 weights, backend=cpu computes at precision fp32 (the default '
            . 'for float weights: exact)'],
           ["clef_model tiny $gguf/types/gg1.iq2_xxs.gguf;",
            'IQ2_XXS weights, backend=cpu computes at precision fp32 (the '
            . 'default for block types q8 expands: its integer products '
            . 'would keep the matrices in 0.23 MB against the file\'s 0.16 '
            . 'MB; precision=q8 multiplies faster)'],
           ["clef_model tiny $gguf/gg1.q4_k_m.gguf precision=fp32;",
            'Q4_K_M weights, backend=cpu computes at precision fp32 '
            . '(precision= in the configuration)'])
{
    my ($conf, $says) = @$t;
    my $srv = ClefNginx->new(http_config => $conf);
    $srv->write_config;
    my ($rc, $out) = $srv->run_nginx('-t');
    is $rc, 0, "nginx -t accepts $conf" or diag $out;
    like $out, qr/\[notice\] (?:\d+#\d+: )?clef_model "tiny": \Q$says\E/,
         "and says: $says" or diag $out;
}

# a Clef GGUF split by llama-gguf-split's rules, given by its first part:
# -t reads every part's header; a later part given alone fails, naming the
# first
{
    my $srv = ClefNginx->new;
    my $p = $srv->prefix;
    my $bin = ClefNginx::clef_bin();
    my $made = `'$bin' gguf-split --split-max-tensors 40 $gguf/gg1.q4_k_m.gguf $p/gg1 2>&1`;
    die "clef gguf-split failed: $made" if $?;
    $srv->{http_config} = "clef_model tiny $p/gg1-00001-of-00003.gguf;";
    $srv->write_config;
    my ($rc, $out) = $srv->run_nginx('-t');
    is $rc, 0, 'nginx -t accepts the first part of a split GGUF' or diag $out;
    $srv->{http_config} = "clef_model tiny $p/gg1-00002-of-00003.gguf;";
    $srv->write_config;
    ($rc, $out) = $srv->run_nginx('-t');
    ok $rc != 0 && $out =~ /is part 2 of 3 of a GGUF split by llama-gguf-split: give its first part, '\Q$p\E\/gg1-00001-of-00003\.gguf'/,
       'and refuses its second part alone, naming the first' or diag $out;
}
