package ClefNginx;

# The harness of the suites Test::Nginx::Socket cannot express: load
# (t/nginx-load.t, t/nginx-concurrency.t, t/nginx-tp.t: many clients at
# once against one nginx), faults (t/nginx-overload.t, t/nginx-lifecycle.t:
# a stopped or killed engine, worker or master in the middle of traffic,
# reloads under load), cluster (t/nginx-cluster.t: four nginx at once),
# `nginx -t` (t/nginx-configtest.t) and an outside client
# (t/nginx-sdk.t: the Python SDK).  Test::Nginx runs one nginx per suite,
# one block at a time, its requests one after the other.
#
# A self-contained nginx instance with ngx_http_clef_module loaded
# (docs/nginx-module-build.md, "Testing a module against the packaged nginx"): its own prefix (mode 0755,
# workers may run as nobody), a free loopback port, every compiled-in path
# overridden, `daemon off` as a child of the test; stopped as Test::Nginx
# stops its nginx (Test::Nginx::Util's kill_process: QUIT, then after
# TEST_NGINX_TIMEOUT seconds SIGKILL), or with the signal a test names.
# bad_log_lines() lists [alert]/[crit]/[emerg]; every suite ends by
# asserting there are none.
#
# The host is shared: other checkouts run the same suites at the same time,
# a user's `make run` serves on its own port.  So nothing here looks at a
# process, port or file that is not this instance's own: processes are
# found by pid and parentage from the test, ports are checked to be this
# nginx's (see start), files live under the prefix or in unique temporary
# names.
#
# Environment: CLEF_MODULE, CLEF_BIN, CLEF_TOKENIZER (ClefModels.pm),
# TEST_NGINX_BINARY, TEST_NGINX_TIMEOUT, TEST_NGINX_KEEP=1 (keep the
# prefix).

use strict;
use warnings;
use Carp qw(croak);
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use ClefModels;
use HTTP::Tiny;
use IO::Socket::INET;
use JSON::PP ();
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(sleep time);

our $ROOT = $ClefModels::ROOT;

BEGIN { $ENV{TEST_NGINX_TIMEOUT} //= 30 }   # a stop waits for the drain
ClefModels::require_test_nginx('Test::Nginx::Util');

sub module_path      { ClefModels::module_path() }
sub clef_bin         { ClefModels::clef_bin() }
sub model_dir        { shift; ClefModels->model_dir(@_) }
sub vision_model_dir { ClefModels->vision_model_dir }
sub free_port        { ClefModels::free_port() }
sub subreaper        { ClefModels::subreaper() }

sub new {
    my ($class, %a) = @_;
    my $self = bless {
        nginx   => $ENV{TEST_NGINX_BINARY} || '/usr/sbin/nginx',
        workers => $a{workers} || 1,
        model   => $a{model},
        model_name => $a{model_name} || 'clef-tiny',
        model_opts => $a{model_opts} // 'threads=1',
        engine  => $a{engine} // 'zone=clef:32m timeout=10s',
        main_config   => $a{main_config}   || '',
        http_config   => $a{http_config}   || '',
        server_config => $a{server_config} || '',
        keep    => $ENV{TEST_NGINX_KEEP} || 0,
        log_level => $ENV{TEST_NGINX_LOG_LEVEL} || 'info',
    }, $class;
    $self->{prefix} = tempdir('clefnginx-XXXXXX', TMPDIR => 1,
                              CLEANUP => !$self->{keep});
    chmod 0755, $self->{prefix};
    make_path("$self->{prefix}/$_") for qw(conf logs tmp html);
    return $self;
}

sub prefix { $_[0]{prefix} }
sub port   { $_[0]{port} }
sub pid    { $_[0]{pid} }
sub base   { "http://127.0.0.1:$_[0]{port}" }

# The config: the module, the model, the engine zone, and the three
# locations every suite uses; tests add their own with server_config.
sub config_text {
    my ($self) = @_;
    my $p = $self->{port};
    my $user = $> == 0 ? "user nobody nogroup;\n" : '';
    my $module = module_path();
    my $model = '';
    if (defined $self->{model}) {
        $model = "    clef_model $self->{model_name} $self->{model} "
               . "$self->{model_opts};\n";
        $model .= "    clef_engine $self->{engine};\n" if $self->{engine} ne '';
    }
    my $locations = defined $self->{model} ? <<"LOC" : '';
        location = /v1/systemone { clef_systemone; }
        location = /v1/models { clef_models; }
        location = /clef-status { clef_status; }
LOC
    return <<"CONF";
load_module $module;
${user}worker_processes $self->{workers};
pid logs/nginx.pid;
error_log logs/error.log $self->{log_level};
$self->{main_config}
events { worker_connections 256; }
http {
    access_log logs/access.log;
    client_body_temp_path tmp/body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
$model$self->{http_config}
    server {
        listen 127.0.0.1:$p;
        root html;
$locations$self->{server_config}
    }
}
CONF
}

sub write_config {
    my ($self, %over) = @_;
    $self->{$_} = $over{$_} for keys %over;
    $self->{port} //= free_port();
    open my $fh, '>', "$self->{prefix}/conf/nginx.conf" or croak $!;
    print $fh $self->config_text;
    close $fh;
}

# Synchronous runs: nginx -t, nginx -s reload.
sub run_nginx {
    my ($self, @args) = @_;
    my $cmd = join ' ', map { "'$_'" } $self->{nginx}, '-p', "$self->{prefix}/",
                                       '-c', 'conf/nginx.conf', @args;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

# Starts nginx on a new free port.  The port may be taken between
# free_port() and nginx's bind() (another suite drew it too): nginx then
# exits with "Address already in use" and we try another port.
sub start {
    my ($self, %over) = @_;
    for my $try (1 .. 5) {
        $self->{port} = free_port();
        $self->write_config(%over);
        my %from = map { $_ => (-s "$self->{prefix}/logs/$_") || 0 }
                   qw(error.log stderr.log);
        my $pid = fork // croak "fork: $!";
        if ($pid == 0) {
            open STDOUT, '>>', "$self->{prefix}/logs/stdout.log";
            open STDERR, '>>', "$self->{prefix}/logs/stderr.log";
            exec $self->{nginx}, '-p', "$self->{prefix}/", '-c', 'conf/nginx.conf',
                 '-g', 'daemon off;';
            exit 127;
        }
        $self->{pid} = $pid;
        my $deadline = time + 15;
        while (time < $deadline) {
            if (waitpid($pid, WNOHANG) == $pid) { delete $self->{pid}; last; }
            return 1 if $self->listening;
            sleep 0.05;
        }
        last if $self->{pid};
        # only what this attempt logged: an earlier one's bind error is old
        my $said = join '', map { substr slurp("$self->{prefix}/logs/$_"), $from{$_} }
                            keys %from;
        next if $said =~ /bind\(\) to 127\.0\.0\.1:$self->{port} failed \(98: /;
        last;
    }
    $self->stop if $self->{pid};
    croak "nginx did not start:\n" . $self->stderr_text . $self->log_text;
}

# True once this instance serves its port.  A connection alone proves
# nothing: while our nginx retries a bind() that failed, the port answers
# for whoever holds it.  nginx writes its pid file only after it has bound
# every listening socket, so our pid there means the port is ours.
sub listening {
    my ($self) = @_;
    my ($pid) = slurp("$self->{prefix}/logs/nginx.pid") =~ /^(\d+)$/m;
    return 0 unless $pid && $self->{pid} && $pid == $self->{pid};
    my $c = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $self->{port},
                                  Proto => 'tcp', Timeout => 1) or return 0;
    close $c;
    return 1;
}

# Starts and waits until the engine is ready (its first load done).
sub start_ready {
    my ($self, %over) = @_;
    $self->start(%over);
    $self->wait_ready;
}

sub wait_ready {
    my ($self, $timeout) = @_;
    $self->wait_for(sub { ($self->metrics->{'clef_engine_state{state="ready"}'}
                          // 0) == 1 }, $timeout // 30)
        or croak "the engine did not become ready:\n" . $self->log_text;
}

sub stop {
    my ($self, $sig) = @_;
    my $pid = delete $self->{pid} or return;
    if (!defined $sig || $sig eq 'QUIT') {
        Test::Nginx::Util::kill_process($pid, 1, 'ClefNginx');
        waitpid $pid, 0;
        return 1;
    }
    for my $s ($sig, 'TERM', 'KILL') {
        kill $s, $pid;
        my $deadline = time + 10;
        while (time < $deadline) {
            return 1 if waitpid($pid, WNOHANG) == $pid;
            sleep 0.05;
        }
    }
    return 0;
}

sub reload {
    my ($self, %over) = @_;
    $self->write_config(%over);
    kill 'HUP', $self->{pid};
}

sub children_of {
    my ($class, $ppid) = @_;
    my @c;
    for my $d (glob '/proc/[0-9]*') {
        open my $fh, '<', "$d/stat" or next;
        my $st = <$fh>;
        my ($pid, $pp) = $st =~ /^(\d+) \(.*\) \S (\d+)/ or next;
        push @c, $pid if $pp == $ppid;
    }
    return sort { $a <=> $b } @c;
}

# Every process below $root (its children, theirs, ...).
sub descendants_of {
    my ($class, $root) = @_;
    my %kids;
    for my $d (glob '/proc/[0-9]*') {
        open my $fh, '<', "$d/stat" or next;
        my $st = <$fh> // next;
        my ($pid, $pp) = $st =~ /^(\d+) \(.*\) \S (\d+)/ or next;
        push @{ $kids{$pp} }, $pid;
    }
    my @all;
    my @frontier = ($root);        # breadth first: processes whose children are next
    while (defined(my $p = shift @frontier)) {
        my @children = @{ $kids{$p} || [] };
        push @all, @children;
        push @frontier, @children;
    }
    return sort { $a <=> $b } @all;
}

sub cmdline {
    my ($class, $pid) = @_;
    open my $fh, '<', "/proc/$pid/cmdline" or return '';
    local $/;
    my $c = <$fh> // '';
    $c =~ s/\0+$//;
    $c =~ tr/\0/ /;
    return $c;
}

sub worker_pids {
    my ($self) = @_;
    my $m = $self->{pid} or return ();
    return grep { ClefNginx->cmdline($_) =~ /worker process/ }
           ClefNginx->children_of($m);
}

sub alive { my ($class, $pid) = @_; return $pid && kill(0, $pid) ? 1 : 0 }

# 1 once $pid has exited, reaped or not (a zombie waiting for its parent,
# or for init, has exited)
sub exited {
    my ($class, $pid) = @_;
    open my $fh, '<', "/proc/$pid/stat" or return 1;
    my ($state) = (<$fh> // '') =~ /^\d+ \(.*\) (\S)/;
    return !defined $state || $state eq 'Z' ? 1 : 0;
}

sub wait_for {
    my ($self, $cond, $timeout) = @_;
    my $deadline = time + ($timeout // 10);
    while (time < $deadline) {
        return 1 if $cond->();
        sleep 0.05;
    }
    return $cond->() ? 1 : 0;
}

# ---- HTTP --------------------------------------------------------------

my $json = ClefModels->json;
sub json { $json }

sub request {
    my ($self, $method, $uri, $body, $headers, $timeout) = @_;
    my $ua = HTTP::Tiny->new(timeout => $timeout // 20, keep_alive => 0);
    my %opt = (headers => $headers || {});
    $opt{content} = $body if defined $body;
    my $r = $ua->request($method, $self->base . $uri, \%opt);
    $r->{json} = eval { $json->decode($r->{content}) }
        if ($r->{headers}{'content-type'} || '') =~ m{application/json};
    return $r;
}

sub post_json {
    my ($self, $body, $headers, $timeout) = @_;
    $body = $json->encode($body) if ref $body;
    return $self->request('POST', '/v1/systemone', $body,
        { 'Content-Type' => 'application/json', %{ $headers || {} } },
        $timeout);
}

# clef_status as a hash: "name{labels}" => value
sub metrics {
    my ($self) = @_;
    my $r = $self->request('GET', '/clef-status', undef, {}, 5);
    my %m;
    return \%m unless $r->{status} == 200;
    for (split /\n/, $r->{content}) {
        next if /^#/;
        my ($k, $v) = /^(\S+) (\S+)$/ or next;
        $m{$k} = $v;
    }
    return \%m;
}

sub metric { my ($self, $name) = @_; return $self->metrics->{$name} // 0 }

# Runs `clients` processes in parallel, each sending up to `per_client`
# requests made by $make->($client, $i) (undef ends that client early);
# returns [ [client, i, status, body], ... ].
sub parallel {
    my ($self, $clients, $per_client, $make, $timeout) = @_;
    my $dir = tempdir('par-XXXXXX', DIR => $self->{prefix}, CLEANUP => 1);
    my @kids;
    for my $c (0 .. $clients - 1) {
        my $pid = fork // croak "fork: $!";
        if ($pid == 0) {
            open my $out, '>', "$dir/$c" or exit 1;
            my $ua = HTTP::Tiny->new(timeout => $timeout // 30, keep_alive => 1);
            for my $i (0 .. $per_client - 1) {
                my $body = $make->($c, $i);
                last unless defined $body;
                $body = $json->encode($body) if ref $body;
                my $r = $ua->request('POST', $self->base . '/v1/systemone',
                    { content => $body,
                      headers => { 'Content-Type' => 'application/json' } });
                my $content = $r->{content} // '';
                $content =~ s/\n/ /g;
                print $out "$c\t$i\t$r->{status}\t$content\n";
            }
            close $out;
            POSIX::_exit(0);
        }
        push @kids, $pid;
    }
    waitpid $_, 0 for @kids;
    my @res;
    for my $c (0 .. $clients - 1) {
        open my $in, '<', "$dir/$c" or next;
        while (<$in>) {
            chomp;
            push @res, [ split /\t/, $_, 4 ];
        }
    }
    return \@res;
}

# ---- the reference: build/clef decide on the same model -------------------

# What `clef decide` answers on this instance's model, at the precision=
# of model_opts, under the name the server gives its model.
sub decide {
    my ($self, $body) = @_;
    my ($prec) = $self->{model_opts} =~ /\bprecision=(\w+)/;
    return ClefModels->decide($self->{model}, $body,
                              name => $self->{model_name},
                              $prec ? (precision => $prec) : ());
}

# ---- logs -------------------------------------------------------------------

sub slurp { my $f = shift; open my $fh, '<', $f or return ''; local $/; <$fh> }
sub log_text    { slurp("$_[0]{prefix}/logs/error.log") }
sub stderr_text { slurp("$_[0]{prefix}/logs/stderr.log") }

sub bad_log_lines {
    my ($self, @allowed) = @_;
    return grep {
        my $l = $_;
        /\[(alert|crit|emerg)\]/ && !grep { $l =~ $_ } @allowed
    } split /\n/, $self->log_text;
}

sub DESTROY { $_[0]->stop }

1;
