# make install / make uninstall into a DESTDIR: exactly the files a Debian
# libnginx-mod-* package installs (the module, the engine library, the
# video decoder, the CUDA library when it was built, the modules-available
# snippet and its modules-enabled link), the module byte for byte, a
# snippet that the packaged nginx loads the module with, and nothing left
# after make uninstall.
use strict;
use warnings;
use Cwd qw(abs_path);
use File::Compare qw(compare);
use File::Find qw(find);
use File::Temp qw(tempdir);
use FindBin;
use Test::More;

my $root = abs_path("$FindBin::Bin/..");
my $module = "$root/build/ngx_http_clef_module.so";
my $cuda = -f "$root/build/libclef_cuda.so";
my $nginx = $ENV{TEST_NGINX_BINARY} || '/usr/sbin/nginx';

plan skip_all => 'build/ngx_http_clef_module.so is not built (make)' unless -f $module;

# make from inside `make test`: the outer make's jobserver and flags are
# not for this one
my $make = "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C '$root'";

# Every file and link under $dir, relative, links as "path -> target".
sub installed {
    my ($dir) = @_;
    my @f;
    find({ no_chdir => 1, wanted => sub {
        return if -d $_ && !-l $_;
        my $rel = substr $_, length($dir) + 1;
        push @f, -l $_ ? "$rel -> " . readlink($_) : $rel;
    } }, $dir);
    return sort @f;
}

sub mode { sprintf '%04o', (lstat $_[0])[2] & 07777 }

my $dest = tempdir('clef-install-XXXXXX', TMPDIR => 1, CLEANUP => 1);

# twice: a second install over the first is fine (ln -sf, install)
for my $round (1, 2) {
    my $out = `$make install DESTDIR='$dest' 2>&1`;
    is $?, 0, "make install DESTDIR=... exits 0 (round $round)" or diag $out;
}

my @want = (
    'etc/nginx/modules-enabled/50-mod-http-clef.conf -> '
        . '/usr/share/nginx/modules-available/mod-http-clef.conf',
    'usr/lib/nginx/modules/ngx_http_clef_module.so',
    'usr/lib/nginx/modules/libclef_engine.so',
    'usr/lib/nginx/modules/clef-decoder',
    ($cuda ? 'usr/lib/nginx/modules/libclef_cuda.so' : ()),
    'usr/share/nginx/modules-available/mod-http-clef.conf',
);
is_deeply [ installed($dest) ], [ sort @want ],
    'exactly the module, the engine library, the video decoder'
    . ($cuda ? ', the CUDA library' : '')
    . ', the snippet and its link';

my $lib = "$dest/usr/lib/nginx/modules";
is compare("$lib/ngx_http_clef_module.so", $module), 0, 'the module as built';
is mode("$lib/ngx_http_clef_module.so"), '0644', 'mode 0644, as Debian installs modules';
is compare("$lib/libclef_engine.so", "$root/build/libclef_engine.so"), 0,
    'the engine library as built, next to the module (the engine loads it '
    . 'from there)';
is compare("$lib/clef-decoder", "$root/build/clef-decoder"), 0,
    'the video decoder as built, next to the engine library (the engine '
    . 'runs it from there)';
is mode("$lib/clef-decoder"), '0755', 'mode 0755: a program';
if ($cuda) {
    is compare("$lib/libclef_cuda.so", "$root/build/libclef_cuda.so"), 0,
        'the CUDA library as built, next to the module';
}
is slurp("$dest/usr/share/nginx/modules-available/mod-http-clef.conf"),
    "load_module /usr/lib/nginx/modules/ngx_http_clef_module.so;\n",
    'the snippet loads it from its installed path, not from DESTDIR';

# The same install with the three directories moved under a scratch root:
# the packaged nginx, given the modules-enabled include of Debian's
# nginx.conf, loads the module through the link and the snippet.
my $alt = tempdir('clef-install-alt-XXXXXX', TMPDIR => 1, CLEANUP => 1);
chmod 0755, $alt;
my $dirs = "NGX_MODULES_DIR='$alt/modules' NGX_MODULES_AVAILABLE='$alt/available' "
         . "NGX_MODULES_ENABLED='$alt/enabled'";
my $out = `$make install $dirs 2>&1`;
is $?, 0, 'make install with other directories' or diag $out;
mkdir "$alt/$_" for qw(conf logs);
open my $fh, '>', "$alt/conf/nginx.conf" or die $!;
print $fh "include $alt/enabled/*.conf;\nerror_log logs/error.log;\n"
        . "pid logs/nginx.pid;\nevents { }\n";
close $fh;
$out = `'$nginx' -p '$alt/' -c conf/nginx.conf -t 2>&1`;
is $?, 0, 'the packaged nginx loads the module through modules-enabled' or diag $out;
$out = `$make uninstall $dirs 2>&1`;
is_deeply [ grep { !m{^(conf|logs)/} } installed($alt) ], [],
    'make uninstall with the same directories removes them all' or diag $out;

$out = `$make uninstall DESTDIR='$dest' 2>&1`;
is $?, 0, 'make uninstall DESTDIR=... exits 0' or diag $out;
is_deeply [ installed($dest) ], [], 'and nothing of it is left';

done_testing();

sub slurp { my $f = shift; open my $fh, '<', $f or return ''; local $/; <$fh> }
