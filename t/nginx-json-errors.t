# Every error nginx itself sends is JSON where clef_json_errors is on, as
# in the shipped conf/clef.conf and conf/edge.conf: an unknown path, a
# malformed request line, Content-Length together with chunked, a negative
# Content-Length, a URI or header too long, a body over the limit outside a
# clef location, limit_req's 429, a 500 and a 502.  Each exact body is
# asserted; a JSON answer of a proxied node is passed through untouched,
# and a server with clef_json_errors off keeps nginx's HTML.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::INET;
use ClefNginx;

my $srv = ClefNginx->new(
    model => ClefNginx->model_dir(1),
    workers => 1,
    http_config => "    clef_json_errors on;\n"
                 . "    large_client_header_buffers 2 1k;\n"
                 . '    limit_req_zone $binary_remote_addr zone=once:1m '
                 . "rate=1r/m;\n    limit_req_status 429;\n"
                 . "    server {\n        listen 127.0.0.1:%HTML%;\n"
                 . "        clef_json_errors off;\n    }\n",
    server_config => <<'LOC');
        location = /upload { client_max_body_size 10; return 200 "ok\n"; }
        location = /limited { limit_req zone=once; }
        location = /boom { return 500; }
        location = /gone { proxy_pass http://127.0.0.1:1; }
        location = /json-node {
            default_type application/json;
            return 429 '{"detail":{"error_type":"rate_limit_error","message":"from the node"}}';
        }
LOC

# the second server (clef_json_errors off) listens on a port of its own
my $html_port = ClefNginx::free_port();
$srv->{http_config} =~ s/%HTML%/$html_port/;
$srv->start_ready;
spew($srv->prefix . '/html/limited', "ok\n");

# One raw request; returns (status, headers, body).
sub spew {
    my ($f, $text) = @_;
    open my $fh, '>', $f or die "$f: $!";
    print $fh $text;
    close $fh;
}

sub raw {
    my ($req, $port) = @_;
    my $c = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $port // $srv->port) or die $!;
    print $c $req;
    local $/;
    my $resp = <$c> // '';
    close $c;
    my ($head, $body) = split /\r\n\r\n/, $resp, 2;
    my ($status) = ($head // '') =~ m{^HTTP/1\.[01] (\d+)};
    return ($status // 0, $head // '', $body // '');
}

my $get = "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
my @cases = (
    [ 'unknown path', sprintf($get, '/nothing-here'), 404,
      '{"detail":"Not Found"}' ],
    [ 'malformed request line', "GARBAGE\r\n\r\n", 400,
      '{"detail":"Bad Request"}' ],
    [ 'Content-Length together with chunked',
      "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
      . "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n",
      400, '{"detail":"Bad Request"}' ],
    [ 'negative Content-Length',
      "POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n"
      . "Connection: close\r\n\r\n", 400, '{"detail":"Bad Request"}' ],
    [ 'URI too long', sprintf($get, '/' . ('a' x 3000)), 414,
      '{"detail":"URI Too Long"}' ],
    # nginx answers a header too long (its 494) with 400 and keeps no trace
    # of why by the time the response is made
    [ 'header too long',
      "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " . ('b' x 3000)
      . "\r\nConnection: close\r\n\r\n", 400, '{"detail":"Bad Request"}' ],
    [ 'body over client_max_body_size outside a clef location',
      "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
      . "Connection: close\r\n\r\n" . ('x' x 100), 413,
      '{"detail":"Request body too large: the limit is 10 bytes"}' ],
    [ 'a 500', sprintf($get, '/boom'), 500,
      '{"detail":{"error_type":"internal_error","message":"the server '
      . 'answered 500"}}' ],
    [ 'an upstream that refuses: 502', sprintf($get, '/gone'), 502,
      '{"detail":{"error_type":"internal_error","message":"the server '
      . 'answered 502"}}' ],
    [ 'a proxied node\'s own JSON error passes through',
      sprintf($get, '/json-node'), 429,
      '{"detail":{"error_type":"rate_limit_error","message":"from the node"}}' ],
);
for my $c (@cases) {
    my ($name, $req, $want_status, $want_body) = @$c;
    my ($status, $head, $body) = raw($req);
    is "$status $body", "$want_status $want_body", "$name: $want_status JSON";
    like $head, qr{\r\nContent-Type: application/json\r\n}i,
        "$name: Content-Type application/json";
}

raw(sprintf $get, '/limited');
my ($st, $head, $body) = raw(sprintf $get, '/limited');
is "$st $body", '429 {"detail":{"error_type":"rate_limit_error","message":'
    . '"Too Many Requests"}}', 'limit_req: 429 in the shape the SDKs retry on';
like $head, qr{\r\nRetry-After: 1\r\n}, 'with Retry-After';

($st, $head, $body) = raw(sprintf($get, '/nothing-here'), $html_port);
is $st, 404, 'clef_json_errors off: 404';
like $body, qr{<html>}, 'nginx\'s own HTML page';

$srv->stop;
is_deeply [$srv->bad_log_lines], [], 'no [alert], [crit] or [emerg]';

done_testing;
