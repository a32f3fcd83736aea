#!/bin/sh
# Builds the libFuzzer harnesses of the untrusted-input path (engine sources
# with clang, libFuzzer, ASan and UBSan) into build/fuzz/, seeds a corpus
# from the committed fixtures into build/fuzz-corpus/, and runs each
# harness in turn for SECONDS seconds (default 180), one worker.
#
#   t/fuzz/run.sh [SECONDS [HARNESS...]]      from the repository root
#   t/fuzz/run.sh build                       only build
#
# HARNESS is json, tokenizer, request, base64, png, jpeg, webp, gguf,
# video or audio (default: all).  base64 reads "images" items as the worker does;
# png, jpeg and webp run a decoder entry point, EXIF and preprocessing
# (fuzz_image.h), seeded with t/fixtures/images/corpus; gguf runs the GGUF
# reader and every dequantizer on what it accepts, seeded with small GGUF
# files that seed-corpus.py writes; video runs the in-memory demuxer, the
# decoders, the colour conversion and the processor (fuzz_video.c), seeded
# with the small clips of t/fixtures/video/clips, under dense Clef's sampling
# and Clef Omni's timed one; audio runs the audio
# demuxers, decoders, the resampling graph and the log-mel features
# (fuzz_audio.c), seeded with t/fixtures/audio/clips.  Crashes, leaks, timeouts
# (more than FUZZ_TIMEOUT seconds, default 1, on one input)
# are written to build/fuzz/artifacts/.  FUZZ_FLAGS adds libFuzzer flags
# (e.g. FUZZ_FLAGS=-len_control=0 to try long inputs from the start).
# The Qwen3 tokenizer is the repository's (t/fixtures/tokenizer/qwen3).
# The json and request harnesses get the words of t/fuzz/request.dict.
set -eu

CC=${FUZZ_CC:-clang}
OUT=build/fuzz
CORPUS=build/fuzz-corpus
SECONDS_EACH=${1:-180}
[ $# -gt 0 ] && shift
HARNESSES=${*:-json tokenizer request base64 png jpeg webp gguf video audio}
TIMEOUT=${FUZZ_TIMEOUT:-1}

PKGS="libpcre2-8 libutf8proc jansson libpng libjpeg libwebp libwebpdemux
      libavformat libavcodec libavfilter libswscale libavutil"
CFLAGS="-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer -march=x86-64-v3
        -Wall -Wextra -Werror -Wno-unused-parameter -Iengine
        -fsanitize=address,undefined -fno-sanitize-recover=undefined
        $(pkg-config --cflags $PKGS)"
LIBS="$(pkg-config --libs $PKGS) -lm -lpthread"

# the engine files the untrusted path goes through
SRC="base/arena base/buf base/error base/mem text/json text/pyfloat text/render
     protocol/request protocol/plan protocol/encode protocol/mrope protocol/answer
     text/tokenizer text/tokenizer_added text/tokenizer_map text/tokenizer_regex
     text/tokenizer_unicode text/bpe text/bpe_cache media/base64
     media/image_input media/image_probe media/image_decode media/decode_png
     media/decode_jpeg media/decode_webp media/exif media/resize
     media/processor media/image_size media/media media/kinds media/prepare
     model/gguf model/gguf_split model/quant model/quant_legacy model/quant_k
     model/quant_k_low model/quant_iq model/quant_iq4 model/quant_iq_grids
     model/quant_tq model/quant_int model/tensor
     model/dtype media/video_decode media/video_sample media/video_process
     media/media_kwargs media/media_wire media/video_input media/video_probe
     media/video_item media/decoder media/decoder_lane media/decoder_wire
     base/dl
     base/path media/audio_decode media/audio_features media/audio_tokens
     media/audio_input media/audio_probe"

mkdir -p $OUT/obj $OUT/artifacts
objs=
for s in $SRC; do
    o=$OUT/obj/$(basename $s).o
    if [ ! -f $o ] || [ engine/$s.c -nt $o ] \
       || [ -n "$(find engine -name '*.h' -newer $o)" ]; then
        echo "cc engine/$s.c"
        $CC $CFLAGS -fsanitize=fuzzer-no-link -c -o $o engine/$s.c
    fi
    objs="$objs $o"
done
for h in json tokenizer request base64 png jpeg webp gguf video audio; do
    echo "cc t/fuzz/fuzz_$h.c"
    $CC $CFLAGS -fsanitize=fuzzer -It/fuzz -o $OUT/fuzz_$h t/fuzz/fuzz_$h.c $objs $LIBS
done

python3 t/fuzz/seed-corpus.py $CORPUS
# the decoders start from the image corpus, base64 from its smallest files
for f in png jpeg webp base64 video audio; do
    mkdir -p $CORPUS/$f
done
for p in t/fixtures/images/corpus/*; do
    case $p in
        *.png) cp -n "$p" $CORPUS/png/ ;;
        *.jpg) cp -n "$p" $CORPUS/jpeg/ ;;
        *.webp) cp -n "$p" $CORPUS/webp/ ;;
    esac
    if [ "$(stat -c %s "$p")" -lt 20000 ]; then
        base64 -w0 "$p" > "$CORPUS/base64/$(basename "$p").b64"
    fi
done

# the video harness starts from the clips under 64 KiB (its -max_len)
for p in t/fixtures/video/clips/*; do
    if [ "$(stat -c %s "$p")" -lt 65536 ]; then
        cp -n "$p" $CORPUS/video/
    fi
done

# the audio harness from the clips under 64 KiB
for p in t/fixtures/audio/clips/*; do
    if [ "$(stat -c %s "$p")" -lt 65536 ]; then
        cp -n "$p" $CORPUS/audio/
    fi
done

[ "$SECONDS_EACH" = build ] && exit 0

status=0
for h in $HARNESSES; do
    echo "== fuzz_$h: $SECONDS_EACH s"
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    dict=
    case $h in json|request) dict=-dict=t/fuzz/request.dict ;; esac
    # a video input may rightly take its 2 s decoding budget
    t=$TIMEOUT
    [ $h = video ] && t=${FUZZ_TIMEOUT:-5}
    [ $h = audio ] && t=${FUZZ_TIMEOUT:-5}
    $OUT/fuzz_$h $dict -max_len=65536 -rss_limit_mb=2048 -timeout="$t" \
        -max_total_time="$SECONDS_EACH" -workers=1 -print_final_stats=1 \
        -artifact_prefix=$OUT/artifacts/$h- ${FUZZ_FLAGS:-} \
        $CORPUS/$h || status=1
done
exit $status
