# The engine's libraries stay out of nginx's processes (issue 19 item 5;
# engine/serve/engine_library.h says why and how): the module's .so links
# the client part of libclef alone, resolves every symbol it needs from
# nginx and its own libraries, and exports no engine code; a running
# worker maps no BLAS, image codec, media decoder or backend, while the
# engine process does, except the codecs: FFmpeg and the image codecs
# (libpng, libjpeg, libwebp), which only the decode process clef-decoder
# links, so that no codec parses a request's bytes in the engine; a module
# without its engine library beside it is refused by `nginx -t`.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use File::Copy qw(copy);
use File::Temp qw(tempdir);
use Test::More;
use ClefNginx;

my $module = ClefNginx->module_path;
my $dir = $module =~ s{/[^/]+$}{}r;
my $engine_lib = "$dir/libclef_engine.so";
my $nginx = $ENV{TEST_NGINX_BINARY} || '/usr/sbin/nginx';

# libraries that belong to the engine process only
my $heavy = qr/libopenblas|libgfortran|libpng|libjpeg|libwebp|libav(?:format|codec|util)|libswscale|libswresample|libdnnl|libcudart|libcublas|libnccl|libclef_engine|libclef_cuda/;

my @needed = map { /^\s*(\S+)/ ? $1 : () } `ldd $module`;
ok @needed >= 3, 'ldd lists the module\'s libraries: ' . join(' ', @needed);
is_deeply [grep { /$heavy/ } @needed], [], 'the module links no engine library';

# every undefined symbol comes from nginx or one of the module's libraries
my %defined;
for my $obj ($nginx, grep { m{^/} } map { /=>\s*(\S+)/ ? $1 : () } `ldd $module`) {
    $defined{$_} = 1 for map { (split)[-1] =~ s/@.*//r }
                         grep { /\s[TDBVWRiu]\s/ } `nm -D --defined-only $obj 2>/dev/null`;
}
my @undef = map { (split)[-1] =~ s/@.*//r } grep { /\sU\s/ } `nm -D $module`;
my @missing = grep { !$defined{$_} && !/^_/ } @undef;
is_deeply \@missing, [], 'every symbol the module needs is nginx\'s or its libraries\''
    . " (" . scalar(@undef) . " undefined)";

# the module exports itself and what nginx's loader dlsym()s
# (ngx_http_clef_module/exports.map): none of the client library it
# links, none of its own helpers, whose names another module could share
my @exported = sort map { (split)[-1] } `nm -D --defined-only $module`;
is_deeply \@exported,
    [qw(ngx_http_clef_module ngx_module_names ngx_module_order ngx_modules)],
    'the module exports ngx_http_clef_module and the loader\'s three tables alone';

# its own symbol table (local symbols included): no engine code inside
my @carried = map { (split)[-1] } grep { /\s[TtDd]\s/ } `nm --defined-only $module`;
is_deeply [grep { /^clef_(?:cpu_|engine_run|decode_|encode_plan|batch_|backend_find|image_preprocess)/ } @carried],
    [], 'the module carries no engine code (' . scalar(@carried) . ' symbols)';

# its sources include the engine's client API, clef.h, and nothing else
# of the engine (issue 30 item 4)
my $src = "$FindBin::Bin/../ngx_http_clef_module";
my @reach;
for my $f (glob "$src/*.[ch]") {
    open my $fh, '<', $f or die "$f: $!";
    while (<$fh>) {
        push @reach, ($f =~ s{.*/}{}r) . ": $1"
            if /^\s*#\s*include\s+"([^"]+)"/
               && $1 ne 'clef.h' && $1 !~ /^ngx_http_clef_/;
    }
}
is_deeply \@reach, [], 'the module includes no engine header but clef.h';

ok -f $engine_lib, "libclef_engine.so beside the module";
my @engine_exports = map { (split)[-1] } grep { /\s[TDBR]\s/ }
                     `nm -D --defined-only $engine_lib`;
is_deeply \@engine_exports, ['clef_engine_library'],
    'libclef_engine.so exports its table alone';

# FFmpeg only in the decode process (docs/design/media.md): neither the
# module nor the engine library links it; the engine runs clef-decoder,
# beside it, for each video
my @engine_needed = map { /^\s*(\S+)/ ? $1 : () } `ldd $engine_lib`;
is_deeply [grep { /libav|libswscale|libswresample|libseccomp/ } @engine_needed],
    [], 'libclef_engine.so links no FFmpeg';
SKIP: {
    skip 'no clef-decoder beside the module (a build with FFMPEG=no)', 3
        unless -x "$dir/clef-decoder";
    is_deeply [grep { /libpng|libjpeg|libwebp/ } @engine_needed], [],
        'libclef_engine.so links no image codec';
    my @engine_syms = grep { /\s[TU]\s/ } `nm $engine_lib 2>/dev/null`;
    is_deeply [grep { /\b(?:png_|jpeg_|WebP)\w+/ } @engine_syms], [],
        'nor calls one';
    my @dec = `ldd $dir/clef-decoder`;
    ok((grep { /libavcodec/ } @dec) && (grep { /libseccomp/ } @dec)
       && (grep { /libpng/ } @dec) && (grep { /libjpeg/ } @dec)
       && (grep { /libwebp/ } @dec),
       'clef-decoder beside it links FFmpeg, the image codecs and '
       . 'libseccomp');
}

# nginx -t refuses a module whose engine library is missing
{
    my $lonely = tempdir(CLEANUP => 1);
    copy($module, "$lonely/ngx_http_clef_module.so") or die "copy: $!";
    my $srv = ClefNginx->new(model => ClefNginx->model_dir(1));
    $srv->write_config;
    my $conf = $srv->prefix . '/conf/nginx.conf';
    my $text = do { local (@ARGV, $/) = $conf; <> };
    $text =~ s{load_module \S+;}{load_module $lonely/ngx_http_clef_module.so;};
    open my $fh, '>', $conf or die;
    print $fh $text;
    close $fh;
    my $out = `$nginx -t -p ${\ $srv->prefix}/ -c conf/nginx.conf 2>&1`;
    isnt $?, 0, 'nginx -t: a module without its engine library is refused';
    like $out, qr{the engine library \Q$lonely\E/libclef_engine\.so cannot be read .*install it beside the module},
        'and the message names the library and the fix';
}

# a running nginx: workers without, the engine with
my $srv = ClefNginx->new(model => ClefNginx->model_dir(1), workers => 2);
$srv->start_ready;
my $r = $srv->post_json('{"model":"m","state":"hi","questions":'
                        . '{"q":{"type":"noul","instructions":"Is it?"}}}');
is $r->{status}, 200, 'the engine answers';

sub maps_of {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/maps" or return '';
    local $/;
    return <$fh> // '';
}

my @workers = $srv->worker_pids;
is scalar(@workers), 2, 'two workers';
for my $w (@workers) {
    my $maps = maps_of($w);
    ok $maps =~ /ngx_http_clef_module\.so/, "worker $w maps the module";
    my @seen = sort keys %{{ map { $_ => 1 } $maps =~ m{(\S*(?:$heavy)\S*)}g }};
    is_deeply \@seen, [], "worker $w maps no engine library";
}
my $m = $srv->metrics;
my $engine = $m->{clef_engine_pid};
my $emaps = maps_of($engine);
like $emaps, qr/libclef_engine\.so/, "the engine ($engine) maps libclef_engine.so";
like $emaps, qr/libopenblas/, 'and the CPU backend\'s OpenBLAS';
unlike $emaps, qr/libpng|libjpeg|libwebp|libavcodec/,
    'but no codec: the decode process has them';
my $kmaps = maps_of($m->{clef_keeper_pid});
unlike $kmaps, qr/libclef_engine\.so/, 'the keeper does not';
$srv->stop;

done_testing;
