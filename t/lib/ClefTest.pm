package ClefTest;

# The project's Test::Nginx::Socket suites start with
#
#     use lib "$FindBin::Bin/lib";
#     use ClefTest;                     # before Test::Nginx::Socket
#     use Test::Nginx::Socket 'no_plan';
#     clef_defaults(model => ClefModels->model_dir(1));
#     run_tests();
#
# Loaded first, this sets what Test::Nginx reads from the environment when
# it loads, each only where the caller did not set it:
#   TEST_NGINX_BINARY        the packaged /usr/sbin/nginx
#   TEST_NGINX_LOAD_MODULES  this tree's build/ngx_http_clef_module.so
#                            (CLEF_MODULE)
#   TEST_NGINX_SERVROOT      a fresh directory under /tmp per suite, and
#   TEST_NGINX_SERVER_PORT   a free loopback port per suite: suites run in
#                            parallel, and next to other checkouts' suites
#   TEST_NGINX_LOG_LEVEL     info (debug would log every event)
#   TEST_NGINX_TIMEOUT       30 s: a request may wait for the engine to
#                            load, and a stop waits for the engine's drain
# and finds Test::Nginx: a system install, else the copy in
# ../shared/vendor/test-nginx (what `make test` passes with prove -I too);
# without either it dies saying so, never skips.
#
# clef_defaults() adds a block preprocessor: a block without its own
# http_config gets the model (clef_model + clef_engine), one without its
# own config the three locations /v1/systemone, /v1/models and
# /clef-status; every block that starts nginx checks that nothing was
# logged at [alert], [crit] or [emerg] (unless it says what it expects in
# no_error_log); one that starts an engine checks, once nginx has stopped,
# that the engine's "drained, exiting" is in the log and nothing alarming
# was logged during the stop (unless it says what it expects in
# shutdown_error_log, no_shutdown_error_log); and a block with a `--- decide` section expects, as its
# body, what `build/clef decide` answers for its request's body on the same
# checkpoint (JSON compared once canonical; `--- decide: cloudflare`, in
# the envelope of clef_systemone envelope=cloudflare).

use strict;
use warnings;
use Exporter 'import';
use File::Temp qw(tempdir);
use JSON::PP ();
use ClefModels;

our @EXPORT = qw(clef_defaults clef_http_config canon_json);

$ENV{TEST_NGINX_BINARY}       //= '/usr/sbin/nginx';
$ENV{TEST_NGINX_LOAD_MODULES} //= ClefModels::module_path();
$ENV{TEST_NGINX_LOG_LEVEL}    //= 'info';
$ENV{TEST_NGINX_TIMEOUT}      //= 30;
$ENV{TEST_NGINX_SERVER_PORT}  //= $ENV{TEST_NGINX_PORT}
                                  // ClefModels::free_port();
if (!defined $ENV{TEST_NGINX_SERVROOT}) {
    # kept when nginx is meant to outlive the suite
    my $keep = $ENV{TEST_NGINX_NO_CLEAN} || $ENV{CLEF_TEST_KEEP};
    $ENV{TEST_NGINX_SERVROOT} = tempdir('clef-servroot-XXXXXX', TMPDIR => 1,
                                        CLEANUP => !$keep);
    # workers may run as another user: the prefix must be traversable
    chmod 0755, $ENV{TEST_NGINX_SERVROOT};
}

ClefModels::require_test_nginx('Test::Nginx::Socket');

# an nginx that daemonises is the suite's child, reaped the moment it
# exits: Test::Nginx's stop then returns when nginx is really gone
ClefModels::subreaper();

my $json = JSON::PP->new->canonical(1)->loose(1);

# A Test::Base filter (`--- response_body canon_json`): the JSON text as
# Test::Nginx's response_body_json_sort writes the response's.
sub canon_json {
    my ($text) = @_;
    return $json->encode($json->decode($text)) . "\n";
}

my %conf;

# The http-level lines of a block that has none of its own.
sub clef_http_config {
    my (%o) = (%conf, @_);
    my $name = $o{name} // 'clef-tiny';
    my $opts = $o{model_opts} // 'threads=1';
    my $engine = $o{engine} // 'zone=clef:32m timeout=10s';
    return "    clef_model $name $o{model} $opts;\n"
         . "    clef_engine $engine;\n" . ($o{http} // '');
}

my $locations = <<'LOC';
        location = /v1/systemone { clef_systemone; }
        location = /v1/models { clef_models; }
        location = /clef-status { clef_status; }
LOC

# %o: model (a checkpoint directory), name, model_opts, engine (the
# clef_engine parameters), http (more http-level lines), locations (the
# default config), decide (options of ClefModels->decide: precision, tp).
sub clef_defaults {
    %conf = @_;
    Test::Nginx::Socket::add_block_preprocessor(\&preprocess);
}

sub preprocess {
    my ($b) = @_;
    # keepers and engines that nginx left to the suite, once they exit
    ClefModels::reap();
    my $starts = !defined $b->must_die;

    $b->set_value(http_config => clef_http_config())
        if !defined $b->http_config && defined $conf{model};
    $b->set_value(config => $conf{locations} // $locations)
        if !defined $b->config;
    $b->set_value(no_error_log => "[alert]\n[crit]\n[emerg]\n")
        if $starts && !defined $b->no_error_log;

    # nginx's stop returns once the engine has drained: its last line is
    # in the log, and nothing alarming was said while it drained
    if ($starts && $b->http_config =~ /\bclef_model\b/) {
        $b->set_value(shutdown_error_log =>
                      [ qr/clef engine \d+: drained, exiting/ ])
            if !defined $b->shutdown_error_log;
        $b->set_value(no_shutdown_error_log => "[alert]\n[crit]\n[emerg]\n")
            if !defined $b->no_shutdown_error_log;
    }

    if (defined $b->decide) {
        my $req = $b->request;
        my ($body) = $req =~ /\A[^\n]*\n(.*)\z/s
            or die $b->name . ": --- decide needs a request with a body\n";
        $body =~ s/\n\z//;
        my $want = ClefModels->decide($conf{model}, $body,
            name => $conf{name} // 'clef-tiny', %{ $conf{decide} || {} });
        # `--- decide: cloudflare`: in the envelope of Workers AI's REST API
        $want = { result => $want, success => JSON::PP::true(),
                  errors => [], messages => [] }
            if $b->decide eq 'cloudflare';
        $b->set_value(response_body => $json->encode($want) . "\n");
        $b->set_value(response_body_json_sort => 1);
        $b->set_value(error_code => 200) if !defined $b->error_code;
    }
}

1;
