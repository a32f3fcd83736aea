# The directives: a bad model path, a directory or GGUF file that is not
# a decision model, and every misused directive keep nginx from starting,
# with a clear message.  (What `nginx -t` does with a good configuration, and
# the shipped conf/ files: t/nginx-configtest.t.)
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClefTest;
use Test::Nginx::Socket 'no_plan';
use File::Temp qw(tempdir);

master_on();
repeat_each(2);

$ENV{TEST_NGINX_CLEF_MODEL} = ClefModels->model_dir(1);
my $notmodel = tempdir('clef-notmodel-XXXXXX', TMPDIR => 1, CLEANUP => 1);
open my $fh, '>', "$notmodel/config.json" or die $!;
print $fh "{}\n";
close $fh;
$ENV{TEST_NGINX_CLEF_NOTMODEL} = $notmodel;

# GGUF files: llama.cpp's mmproj, and written here a plain Qwen3.5 one
# (converted before llama.cpp had Clef support: its headers are all nginx
# reads of it) and one holding a tensor type ngx_clef does not read
$ENV{TEST_NGINX_CLEF_GGUF} = "$FindBin::Bin/fixtures/gguf";
$ENV{TEST_NGINX_CLEF_QWEN35} = "$notmodel/qwen35.gguf";
$ENV{TEST_NGINX_CLEF_IQ2} = "$notmodel/q8_1.gguf";

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
    open my $out, '>:raw', $path or die "$path: $!";
    print $out $b . $data;
    close $out;
}
write_gguf($ENV{TEST_NGINX_CLEF_QWEN35}, 'qwen35');
# Q8_1 (GGML type 9, llama.cpp's activations): 36 bytes per block of 32
write_gguf($ENV{TEST_NGINX_CLEF_IQ2}, 'clef',
           [ 'blk.0.ffn_down.weight', 9, 72, 32, 2 ]);

clef_defaults();

# The message is an [emerg] that names the directory as nginx was given
# it; nginx's copy of it on stderr is not the suite's output.
add_block_preprocessor(sub {
    my $b = shift;
    my $want = $b->error_log;
    chomp $want;
    $want =~ s/\$(TEST_NGINX_\w+)/$ENV{$1}/g;
    $b->set_value(error_log => [ '[emerg]', $want ]);
    $b->set_value(suppress_stderr => 1);
});

run_tests();

__DATA__

=== TEST 1: a model path that does not exist
--- http_config
clef_model tiny /nonexistent/model/dir;
--- must_die
--- error_log
clef_model "tiny": cannot open "/nonexistent/model/dir" (2: No such file or directory)

=== TEST 2: a directory that is not a decision model
--- http_config
clef_model tiny $TEST_NGINX_CLEF_NOTMODEL;
--- must_die
--- error_log
clef_model "tiny" in "$TEST_NGINX_CLEF_NOTMODEL": 

=== TEST 3: a file instead of a directory
--- http_config
clef_model tiny /etc/hostname;
--- must_die
--- error_log
is not a directory

=== TEST 3a: a plain Qwen3.5 GGUF: no joint head, and what to do
--- http_config
clef_model tiny $TEST_NGINX_CLEF_QWEN35;
--- must_die
--- error_log
(general.architecture "qwen35", converted before llama.cpp had Clef support): it has no joint schema head.  Use a Clef GGUF (general.architecture "clef", e.g. ggml-org's Clef-Flash-GGUF), or convert the Clef release with a current llama.cpp's convert_hf_to_gguf.py

=== TEST 3b: a GGUF tensor of a type ngx_clef does not read, named with its tensor
--- http_config
clef_model tiny $TEST_NGINX_CLEF_IQ2;
--- must_die
--- error_log
tensor 'blk.0.ffn_down.weight' is of type Q8_1, which ngx_clef does not read

=== TEST 3c: an mmproj file given as the model
--- http_config
clef_model tiny $TEST_NGINX_CLEF_GGUF/gg1.mmproj.gguf;
--- must_die
--- error_log
is a vision projector (mmproj) file, not the model: give the model's GGUF, and this file as its mmproj

=== TEST 4: unknown backend
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL backend=tpu;
--- must_die
--- error_log
unknown backend "tpu" (known: cpu, cuda)

=== TEST 4b: unknown precision
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL precision=fp16;
--- must_die
--- error_log
invalid "precision=fp16": precision is fp32, bf16 or q8

=== TEST 4c: fp32 on the CUDA backend, which computes in bf16
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL backend=cuda precision=fp32;
--- must_die
--- error_log
clef_model "tiny": precision=fp32 is for backend=cpu; the CUDA backend computes in bf16

=== TEST 5: unknown clef_model parameter
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL speed=fast;
--- must_die
--- error_log
invalid parameter "speed=fast"

=== TEST 6: a tp the model cannot be split by (the tiny shape has 4 attention heads)
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL backend=cpu tp=3;
--- must_die
--- error_log
clef_model "tiny": tp=3 does not divide the 4 attention heads of the model

=== TEST 6a: the same on CUDA, once tp divides the devices
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL backend=cuda devices=0-5 tp=3;
--- must_die
--- error_log
clef_model "tiny": tp=3 does not divide the 4 attention heads of the model

=== TEST 6b: tp that does not divide the devices
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL backend=cuda devices=0,1,2 tp=2;
--- must_die
--- error_log
clef_model "tiny": tp=2 must divide the 3 devices of devices= into replicas

=== TEST 6b2: tp on CUDA without a device list
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL backend=cuda tp=2;
--- must_die
--- error_log
clef_model "tiny": tp=2 needs devices= naming the GPUs to split over (e.g. devices=0-1)

=== TEST 6c: a device named twice
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL backend=cuda devices=0-2,1;
--- must_die
--- error_log
"devices=0-2,1" names device 1 twice

=== TEST 6d: a bad device list
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL backend=cuda devices=3-1;
--- must_die
--- error_log
invalid "devices=3-1": a list of device numbers and ranges such as 0-7 or 0,2,4-5

=== TEST 6e: devices for the CPU backend
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL devices=0;
--- must_die
--- error_log
clef_model "tiny": devices= applies to a backend with devices (cuda), not to backend=cpu

=== TEST 6f: devices for the CPU backend, with tp
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL backend=cpu devices=0-1 tp=2;
--- must_die
--- error_log
clef_model "tiny": devices= applies to a backend with devices (cuda), not to backend=cpu

=== TEST 6g: gpu_memory for the CPU backend
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL gpu_memory=16g;
--- must_die
--- error_log
clef_model "tiny": gpu_memory= applies to a backend with devices (cuda), not to backend=cpu

=== TEST 6h: gpu_memory that is not a size
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL backend=cuda gpu_memory=lots;
--- must_die
--- error_log
invalid "gpu_memory=lots": a size such as 16g or 24000m

=== TEST 6i: weights that do not fit gpu_memory (the tiny model's bf16 weights, the workspace of 16384 tokens, cuBLASLt's 32 MiB)
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL backend=cuda gpu_memory=16m;
--- must_die
--- error_log
clef_model "tiny": needs 116.6 MB on each GPU (weights 39.4 MB, workspace 43.6 MB at max_batch_tokens=16384, cuBLASLt 33.6 MB) but gpu_memory=16m (16.8 MB)

=== TEST 6j: the weights fit, the workspace of max_batch_tokens does not: the largest batch that fits is named
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL backend=cuda gpu_memory=100m;
--- must_die
--- error_log
clef_model "tiny": needs 116.6 MB on each GPU (weights 39.4 MB, workspace 43.6 MB at max_batch_tokens=16384, cuBLASLt 33.6 MB) but gpu_memory=100m (104.9 MB); max_batch_tokens=11776 fits

=== TEST 6k: clef_engine's max_batch_tokens is the batch planned for
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL backend=cuda gpu_memory=80m;
clef_engine zone=clef:16m max_batch_tokens=8192;
--- must_die
--- error_log
clef_model "tiny": needs 95.2 MB on each GPU (weights 39.4 MB, workspace 22.2 MB at max_batch_tokens=8192, cuBLASLt 33.6 MB) but gpu_memory=80m (83.9 MB); max_batch_tokens=3840 fits

=== TEST 7: two models in one http block
--- http_config
clef_model a $TEST_NGINX_CLEF_MODEL;
clef_model b $TEST_NGINX_CLEF_MODEL;
--- must_die
--- error_log
"clef_model" directive is duplicate: one model per http block

=== TEST 8: clef_engine without a zone
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL;
clef_engine max_queue=10;
--- must_die
--- error_log
"clef_engine" must have "zone=NAME:SIZE"

=== TEST 9: a zone below 1m
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL;
clef_engine zone=clef:64k;
--- must_die
--- error_log
zone "zone=clef:64k" is too small: at least 1m

=== TEST 10: max_queue beyond the zone's slots
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL;
clef_engine zone=clef:1m max_queue=100000;
--- must_die
--- error_log
clef_engine max_queue=100000 needs more slots than a zone of 1048576 bytes has (64)

=== TEST 11: clef_engine without a model
--- http_config
clef_engine zone=clef:8m;
--- must_die
--- error_log
"clef_engine" needs a "clef_model"

=== TEST 12: clef_systemone without a model
--- config
location = /v1/systemone { clef_systemone; }
--- must_die
--- error_log
"clef_systemone" and "clef_models" need a "clef_model" at the http level

=== TEST 13: bad timeout
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL;
clef_engine zone=clef:8m timeout=soon;
--- must_die
--- error_log
invalid parameter "timeout=soon"

=== TEST 14: clef_max_questions below 1
--- http_config
clef_model tiny $TEST_NGINX_CLEF_MODEL;
clef_max_questions 0;
--- config
location = /v1/systemone { clef_systemone; }
--- must_die
--- error_log
clef_max_questions and clef_max_tokens must be at least 1
