/* fuzz-cmdsplit.c: the executor's handling of a `run` action's command
 * (executor/cmdsplit.c): top-level splitting, escaping and prompt counting
 * of an arbitrary string from the client.
 *
 * The rest of the action JSON envelope (executor_execute_action) is not
 * fuzzed: past a few jansson type checks it dispatches to actions that run
 * commands and write files, which a fuzzer must not do. */
#include "config.h"

#include "cmdsplit.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  cleanup_free char *cmd = fuzz_cstring (data, size);
  char **pieces = NULL;
  size_t n = split_bash_commands (cmd, &pieces);
  FUZZ_CHECK (pieces != NULL, "no result array");
  size_t total = 0;
  for (size_t i = 0; i < n; i++)
    {
      FUZZ_CHECK (pieces[i] != NULL, "piece %zu of %zu is NULL", i, n);
      total += strlen (pieces[i]);
    }
  FUZZ_CHECK (pieces[n] == NULL, "array not NULL-terminated at %zu", n);
  /* Pieces are cut from the command: together never longer than it. */
  FUZZ_CHECK (total <= strlen (cmd), "pieces hold %zu bytes of a %zu-byte command", total, strlen (cmd));
  split_free (pieces);

  cleanup_free char *escaped = escape_bash_special_chars (cmd);
  FUZZ_CHECK (escaped != NULL && strlen (escaped) >= strlen (cmd), "escaping shortened the command");
  FUZZ_CHECK (bash_prompt_count (cmd) >= 1, "no prompt");
  return 0;
}
