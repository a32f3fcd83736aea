/*
 * Subcommands of build/clef.  Each lives in its own cli/cmd_<name>.c and is
 * declared weak here so that main.c lists only what was built.
 */
#ifndef CLEF_CLI_COMMANDS_H
#define CLEF_CLI_COMMANDS_H

typedef int (*clef_cmd_fn)(int argc, char **argv);

int clef_cmd_tokenize(int argc, char **argv) __attribute__((weak));
int clef_cmd_encode(int argc, char **argv) __attribute__((weak));
int clef_cmd_render(int argc, char **argv) __attribute__((weak));
int clef_cmd_mkmodel(int argc, char **argv) __attribute__((weak));
int clef_cmd_decide(int argc, char **argv) __attribute__((weak));
int clef_cmd_bench(int argc, char **argv) __attribute__((weak));
int clef_cmd_image(int argc, char **argv) __attribute__((weak));
int clef_cmd_video(int argc, char **argv) __attribute__((weak));
int clef_cmd_audio(int argc, char **argv) __attribute__((weak));
int clef_cmd_gguf_split(int argc, char **argv) __attribute__((weak));

#endif
