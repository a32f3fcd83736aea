# The documentation against the code (README.md and docs/; the rules are
# listed in docs/testing.md, "The documentation's own test").  It needs no
# nginx and no build: it reads the sources.
#
#   plan       a plan version (CLPn) other than the one protocol/plan.c writes
#              (README.md and docs/; directives, parameters and precisions
#              in conf/*.conf too)
#   precision  a precision that base/precision.c does not have
#   directive  a directive (or a clef_* name) the module's source does not have
#   parameter  a clef_model / clef_engine / clef_systemone parameter the
#              module's parsers do not have
#   reference  a directive or parameter of the module missing from
#              docs/directives.md
#   links      a relative link of README.md or docs/ that does not resolve
#              (file, and the heading its #anchor names)
#   citations  a comment that cites a docs/ page (or its section) that does
#              not exist, or cites DESIGN.md or spec/ outside docs/ at all
use strict;
use warnings;
use FindBin;
use File::Find;
use File::Spec;
use Test::More;

my $ROOT = File::Spec->rel2abs("$FindBin::Bin/..");
chdir $ROOT or die "$ROOT: $!";

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or die "$f: $!";
    local $/;
    my $t = <$fh>;
    close $fh;
    return $t;
}

# ---- what the code has ------------------------------------------------------

my @module_src = glob 'ngx_http_clef_module/*.c';
my $module = join "\n", map { slurp($_) } @module_src;

# the plan version plan.c writes: PLAN_MAGIC's four bytes, little endian
my ($magic) = slurp('engine/protocol/plan.c')
    =~ /#define\s+PLAN_MAGIC\s+0x([0-9a-fA-F]{8})u?\b/;
ok(defined $magic, 'plan.c defines PLAN_MAGIC');
my $plan = defined $magic ? pack('V', hex $magic) : 'CLP?';
like($plan, qr/^CLP\d$/, "plan.c writes $plan");

# the precisions: the names base/precision.c parses
my %precision = map { $_ => 1 }
    slurp('engine/base/precision.c') =~ /memcmp\s*\(\s*\w+\s*,\s*"([a-z0-9]+)"/g;
ok(scalar(keys %precision) >= 2, 'precisions: ' . join(' ', sort keys %precision));

# the directives: the module's command table (and per-kind limit
# directives, wherever the kinds table names them)
my %directive;
while ($module =~ /ngx_command_t\s+\w+\[[^\]]*\]\s*=\s*\{(.*?)(?:ngx_null_command|\n\};)/sg) {
    my $table = $1;
    $directive{$_} = 1 for $table =~ /ngx_string\(\s*"(clef_[a-z_]+)"\s*\)/g;
}
for my $f (glob('engine/media/*.c'), @module_src) {
    $directive{$_} = 1 for slurp($f) =~ /"(clef_max_[a-z]+)"/g;
}
ok(exists $directive{clef_model} && exists $directive{clef_engine},
   'directives: ' . join(' ', sort keys %directive));

# the parameters: every string literal "name=..." the module's parsers
# compare a parameter with
my %param;
$param{$_} = 1 for $module =~ /"([a-z_]+)=[^"]*"/g;
ok(exists $param{zone} && exists $param{tp},
   'parameters: ' . join(' ', sort keys %param));

# the variables
my %variable = map { $_ => 1 }
    slurp('ngx_http_clef_module/ngx_http_clef_variables.c')
        =~ /ngx_string\(\s*"(clef_[a-z_]+)"\s*\)/g;

# every clef_* word of the sources (identifiers, metric names, ...)
my (%word, @sources);
find({ no_chdir => 1, wanted => sub {
    my $f = $File::Find::name =~ s{^\./}{}r;
    if (-d $_) {
        $File::Find::prune = 1
            if $f =~ m{^(?:\.git|build|shared|docs|t/fixtures)$|/\.git$};
        return;
    }
    return if $f eq 't/docs.t' || $f eq 'README.md';
    return unless $f =~ /\.(?:c|h|cu|cuh|pm|t|pl|sh|py|md)$/
                  || $f =~ m{(?:^|/)(?:Makefile|config)$};
    push @sources, $f;
}}, '.');
for my $f (@sources) {
    $word{$_} = 1 for slurp($f) =~ /\b(clef_[a-z0-9_]+)/g;
}

# ---- the documents ------------------------------------------------------------

my @docs = ('README.md');
find({ no_chdir => 1, wanted => sub {
    push @docs, $File::Find::name if /\.md$/ && -f $_;
}}, 'docs');
@docs = map { s{^\./}{}r } sort @docs;

# a page's lines, with fenced blocks marked as code, and its headings' anchors
my (%lines, %anchors);

sub slug {
    my ($h) = @_;
    $h = lc $h;
    $h =~ s/`//g;
    $h =~ s/\[([^\]]*)\]\([^)]*\)/$1/g;
    $h =~ s/[^\w\- ]//g;
    $h =~ s/ /-/g;
    return $h;
}

sub read_doc {
    my ($f) = @_;
    return if $lines{$f};
    my ($fence, @l, %seen) = (0);
    for my $line (split /\n/, slurp($f)) {
        if ($line =~ /^\s*```/) {
            $fence = !$fence;
            push @l, [ $line, 1 ];
            next;
        }
        my $code = $fence || $line =~ /^    \S/;
        push @l, [ $line, $code ];
        if (!$fence && $line =~ /^#{1,6}\s+(.*?)\s*#*\s*$/) {
            my $s = slug($1);
            my $n = $seen{$s}++;
            $anchors{$f}{ $n ? "$s-$n" : $s } = 1;
        }
    }
    $lines{$f} = \@l;
}
read_doc($_) for @docs;

my (@plan, @precision, @directive, @parameter, @links);

for my $f (@docs) {
    my $in_stmt = 0;
    my $n = 0;
    for my $l (@{ $lines{$f} }) {
        my ($line, $code) = @$l;
        $n++;
        my $at = "$f:$n";

        # plan versions, wherever they are named
        for my $v ($line =~ /\b(CLP\d+)\b/g) {
            push @plan, "$at names $v; plan.c writes $plan" if $v ne $plan;
        }

        # precisions: precision=A|B and --precision A|B
        for my $list ($line =~ /(?:\bprecision=|--precision[ =])([a-z0-9|\\]+)/g) {
            for my $p (grep { length } split /\\?\|/, $list) {
                push @precision, "$at names precision $p"
                    unless $precision{$p} || $p =~ /^[A-Z]+$/;
            }
        }

        if ($code) {
            # a configuration statement: clef_NAME ... ;  (Syntax:/Default:)
            if ($line =~ /^\s*(?:Syntax:|Default:)?\s*(clef_[a-z_]+)(?=[\s;]|$)/) {
                my $d = $1;
                push @directive, "$at: directive $d" unless $directive{$d};
                $in_stmt = 1;
            }
            if ($in_stmt) {
                for my $p ($line =~ /(?:^|[\s\[|])([a-z_]+)=/g) {
                    push @parameter, "$at: parameter $p=" unless $param{$p};
                }
                $in_stmt = 0 if $line =~ /;/ || $line =~ /^\s*$/;
            }
            next;
        }
        $in_stmt = 0;

        # inline code
        for my $span ($line =~ /`([^`]+)`/g) {
            if ($span =~ /^(clef_[a-z_]+)([\s;].*)?$/s) {
                my ($d, $rest) = ($1, $2);
                if (defined $rest) {            # a statement: clef_x ARGS;
                    push @directive, "$at: directive $d" unless $directive{$d};
                    for my $p ($rest =~ /(?:^|[\s\[|])([a-z_]+)=/g) {
                        push @parameter, "$at: parameter $p=" unless $param{$p};
                    }
                } elsif (!$directive{$d} && !$word{$d}) {
                    push @directive, "$at: $d is neither a directive nor"
                                     . " a name in the sources";
                }
            } elsif ($span =~ /^[a-z_]+=/) {     # parameters: name=value ...
                for my $p ($span =~ /(?:^|\s)([a-z_]+)=/g) {
                    push @parameter, "$at: parameter $p=" unless $param{$p};
                }
            } elsif ($span =~ /^\$(clef_[a-z_]+)$/) {
                push @directive, "$at: variable \$$1" unless $variable{$1};
            }
        }

        # relative links
        (my $text = $line) =~ s/`[^`]*`//g;
        for my $target ($text =~ /\]\(([^)\s]+)\)/g) {
            next if $target =~ m{^(?:[a-z]+:|//)};
            my ($path, $anchor) = $target =~ /^([^#]*)(?:#(.*))?$/;
            my $dir = $f =~ m{/} ? $f =~ s{/[^/]+$}{}r : '.';
            my $file = length $path ? File::Spec->canonpath("$dir/$path") : $f;
            if (!-e $file) {
                push @links, "$at: $target: no such file";
                next;
            }
            next unless defined $anchor && length $anchor && $file =~ /\.md$/;
            read_doc($file);
            push @links, "$at: $target: no heading with that anchor"
                unless $anchors{$file}{$anchor};
        }
    }
}

# the example configurations: their clef_* directives and parameters
for my $f (glob 'conf/*.conf') {
    my ($n, $in_stmt) = (0, 0);
    for my $line (split /\n/, slurp($f)) {
        $n++;
        $line =~ s/#.*//;
        if ($line =~ /^\s*(clef_[a-z_]+)(?=[\s;]|$)/) {
            push @directive, "$f:$n: directive $1" unless $directive{$1};
            $in_stmt = 1;
        }
        next unless $in_stmt;
        for my $p ($line =~ /(?:^|\s)([a-z_]+)=/g) {
            push @parameter, "$f:$n: parameter $p=" unless $param{$p};
        }
        for my $list ($line =~ /\bprecision=([a-z0-9]+)/g) {
            push @precision, "$f:$n names precision $list"
                unless $precision{$list};
        }
        $in_stmt = 0 if $line =~ /;/;
    }
}

is_deeply(\@plan, [], "the documents name plan $plan only")
    or diag join "\n", @plan;
is_deeply(\@precision, [], 'the documents name precisions the engine has')
    or diag join "\n", @precision;
is_deeply(\@directive, [], 'the documents name directives the module has')
    or diag join "\n", @directive;
is_deeply(\@parameter, [], 'the documents name parameters the module has')
    or diag join "\n", @parameter;
is_deeply(\@links, [], 'every relative link resolves')
    or diag join "\n", @links;

# ---- the reference has every directive and parameter --------------------------

my $ref = slurp('docs/directives.md');
my @missing;
for my $d (sort keys %directive) {
    push @missing, "directive $d" unless $ref =~ /^##\s+\Q$d\E\s*$/m
                                         && $ref =~ /Syntax:\s+\Q$d\E\b/;
}
for my $p (sort keys %param) {
    push @missing, "parameter $p=" unless $ref =~ /`\Q$p\E=/;
}
is_deeply(\@missing, [], 'docs/directives.md documents every directive and parameter')
    or diag join "\n", @missing;

# ---- what the sources cite ----------------------------------------------------

my @cite;
my $design = 'DESIGN';     # kept apart so that this file does not cite it
for my $f (@sources) {
    my $n = 0;
    for my $line (split /\n/, slurp($f)) {
        $n++;
        push @cite, "$f:$n cites $design"
            if $line =~ /\b\Q$design\E(?:\.md)?\b/;
        push @cite, "$f:$n cites $1 (not in the repository: docs/ has it)"
            if $line =~ m{(?<![\w/.])(spec/[\w-]+\.md)};
        while ($line =~ m{\b(docs/[\w./-]*[\w/])((?:\s*,?\s*§\s*[\d.]*\d)?)}g) {
            my ($page, $sect) = ($1, $2);
            if (!-e $page) {
                push @cite, "$f:$n cites $page, which does not exist";
                next;
            }
            my ($num) = $sect =~ /§\s*([\d.]*\d)/;
            next unless defined $num && $page =~ /\.md$/;
            my $t = slurp($page);
            push @cite, "$f:$n cites $page §$num, which has no such section"
                unless $t =~ /^#{2,6}\s+\Q$num\E[.\s]/m;
        }
    }
}
is_deeply(\@cite, [], 'comments cite docs/ pages that exist, and no DESIGN or spec/')
    or diag join "\n", @cite;

done_testing;
