package ClefNginx;

# A self-contained nginx instance with ngx_http_clef_module loaded, for the
# t/*.t suites (spec/nginx-module-recipe.md, appendix C): its own prefix
# (mode 0755, workers may run as nobody), a free loopback port, every
# compiled-in path overridden, `daemon off` as a child of the test, stopped
# by pid.  bad_log_lines() lists [alert]/[crit]/[emerg]; every suite ends
# by asserting there are none.
#
# The host is shared: other checkouts run the same suites at the same time,
# a user's `make run` serves on its own port.  So nothing here looks at a
# process, port or file that is not this instance's own: processes are
# found by pid and parentage from the test, ports are checked to be this
# nginx's (see start), files live under the prefix or in unique temporary
# names.
#
# Environment: CLEF_MODULE (the .so), CLEF_BIN (build/clef), CLEF_TOKENIZER
# (another tokenizer for the fixture model than t/fixtures/tokenizer/qwen3),
# TEST_NGINX_BINARY, TEST_NGINX_KEEP=1 (keep the prefix).

use strict;
use warnings;
use Carp qw(croak);
use Cwd qw(abs_path getcwd);
use File::Path qw(make_path remove_tree);
use File::Temp qw(tempdir);
use FindBin;
use HTTP::Tiny;
use IO::Socket::INET;
use JSON::PP ();
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(sleep time);

our $ROOT = abs_path("$FindBin::Bin/..");

sub module_path {
    return $ENV{CLEF_MODULE} || "$ROOT/build/ngx_http_clef_module.so";
}

sub clef_bin {
    return $ENV{CLEF_BIN} || "$ROOT/build/clef";
}

# The repository's copy of the Qwen3 tokenizer: a clone needs nothing
# beside it.  CLEF_TOKENIZER may name another directory for experiments.
sub tokenizer_dir {
    my $dir = $ENV{CLEF_TOKENIZER} || "$ROOT/t/fixtures/tokenizer/qwen3";
    croak "no tokenizer.json in $dir" unless -f "$dir/tokenizer.json";
    return $dir;
}

# build/t/NAME: the checkpoint `clef mkmodel ARGS` makes, made once and
# shared by the suites; made in a temporary directory and renamed, so that
# suites run in parallel never see half of one.
sub made_model {
    my ($name, $args) = @_;
    my $dir = "$ROOT/build/t/$name";
    return $dir if -f "$dir/joint_head_config.json";
    make_path("$ROOT/build/t");
    my $tmp = tempdir("$name-XXXXXX", DIR => "$ROOT/build/t");
    my $bin = clef_bin();
    my $tok = tokenizer_dir();
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
                      "--shape tiny --seed $seed" . ($text_only ? ' --text-only' : ''));
}

# The checkpoint of the image fixtures (t/fixtures/models/v1.json, seed 11,
# 2 shards: t/fixtures/vision was computed on it).
sub vision_model_dir {
    my ($class) = @_;
    return made_model("nginx-model-v1",
                      qq{--config "$ROOT/t/fixtures/models/v1.json" --seed 11 --shards 2});
}

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

# A loopback port that nobody listens on now.  Taken below the kernel's
# ephemeral range, from which every client socket on the host gets its
# local port: a port from bind(0) is one of those, and the many client
# connections of a concurrent suite could take it before nginx binds it.
# Two suites may still draw the same port; start() then tries another.
sub free_port {
    my ($lo) = split ' ', slurp('/proc/sys/net/ipv4/ip_local_port_range');
    my $range = ($lo // 0) > 11000 ? [10000, $lo - 1] : undef;
    for (1 .. 100) {
        my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
            LocalPort => $range ? $range->[0] + int rand($range->[1] - $range->[0])
                                : 0,
            Proto => 'tcp', Listen => 1, ReuseAddr => 1) or next;
        my $p = $s->sockport;
        close $s;
        return $p;
    }
    croak "cannot find a free loopback port: $!";
}

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
    for my $s ($sig // 'QUIT', 'TERM', 'KILL') {
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

# Makes the calling process the reaper of its orphaned descendants
# (prctl PR_SET_CHILD_SUBREAPER): what a child leaves behind, say a keeper
# forked by an `nginx -t` that has exited, is reparented to the test, not
# to init, where it could not be told from another nginx's processes.
# Alive or exited (a zombie until reaped), it is then among
# descendants_of($$).  False where the kernel refuses.
sub subreaper {
    my $nr = eval { require 'syscall.ph'; &SYS_prctl() };
    return defined $nr && syscall($nr, 36, 1, 0, 0, 0) == 0;
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

my $json = JSON::PP->new->canonical;
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

# One request at a time on one thread, as the server's engine runs with
# threads=1, at the precision= of model_opts; decide echoes the request's
# "model", the server names its own.
sub decide {
    my ($self, $body) = @_;
    my ($prec) = $self->{model_opts} =~ /\bprecision=(\w+)/;
    my $flags = defined $prec ? "--precision $prec" : '';
    $body = $json->encode($body) if ref $body;
    $body =~ s/\n/ /g;
    my $f = "$self->{prefix}/tmp/decide.json";
    open my $fh, '>', $f or croak $!;
    print $fh "$body\n";
    close $fh;
    my $bin = clef_bin();
    my $out = `"$bin" decide "$self->{model}" -t 1 $flags < "$f" 2>&1`;
    croak "clef decide failed:\n$out" if $?;
    my $want = $json->decode($out);
    croak "clef decide refused the request: $out" if $want->{error};
    $want->{model} = $self->{model_name};
    return $want;
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
