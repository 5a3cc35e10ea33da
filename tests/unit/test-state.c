/* test-state.c: the typed sandbox state (sandbox/state.h): every status by
 * name, config.json and state.json parsed and written back byte for byte as
 * older versions wrote them, keys this version does not know kept where
 * they were, and the JSON ps prints for each status.
 * tests/integration/state-compat.sh does the same with a sandbox whose
 * state directory an older ohbox wrote. */
#include "config.h"
#include "sandbox/state.h"
#include "unit.h"

#include <signal.h>
#include <string.h>

/* As ohbox 285fb09 wrote them (captured from a real sandbox). */
#define OLD_CONFIG                                                                                                     \
  "{\"id\":\"" ID "\",\"name\":\"web\",\"image\":\"busybox:latest\",\"image_id\":\"sha256:aa\","                       \
  "\"command\":[\"sleep\",\"100\"],\"created\":\"2026-11-25T08:00:00Z\",\"rm\":false,\"detached\":true,"               \
  "\"store\":\"/var/lib/ohbox\",\"stop_signal\":15,\"tty\":false}"
#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define OLD_RUNNING "{\"status\":\"running\",\"pid\":4242,\"pid_start\":987654,\"started_at\":\"2026-11-25T08:00:01Z\"}"
#define OLD_PAUSED                                                                                                     \
  "{\"status\":\"running\",\"pid\":4242,\"pid_start\":987654,\"started_at\":\"2026-11-25T08:00:01Z\","                 \
  "\"paused\":true}"
#define OLD_EXITED                                                                                                     \
  "{\"status\":\"exited\",\"pid\":4242,\"pid_start\":987654,\"started_at\":\"2026-11-25T08:00:01Z\","                  \
  "\"exit_code\":137,\"finished_at\":\"2026-11-25T08:01:00Z\",\"paused\":false,\"timed_out\":true}"

static json_t *
load (const char *text)
{
  return json_loads (text, JSON_REJECT_DUPLICATES, NULL);
}

static char *
dump (json_t *j)
{
  char *s = json_dumps (j, JSON_COMPACT);
  json_decref (j);
  return s;
}

static void
test_status_names (void)
{
  static const char *const names[] = { "created", "running", "paused", "exited" };
  CHECK (OHBOX_STATUS_COUNT == 4);
  for (int i = 0; i < OHBOX_STATUS_COUNT; i++)
    {
      enum ohbox_sandbox_status s;
      CHECK_STR (ohbox_status_name ((enum ohbox_sandbox_status) i), names[i]);
      CHECK (ohbox_status_parse (names[i], &s) == 0 && (int) s == i);
    }
  enum ohbox_sandbox_status s;
  CHECK (ohbox_status_parse ("Running", &s) < 0 && ohbox_status_parse ("", &s) < 0
         && ohbox_status_parse (NULL, &s) < 0);
  CHECK_STR (ohbox_status_name ((enum ohbox_sandbox_status) 99), "unknown");
}

/* TEXT parsed as state.json and written back unchanged. */
static int
record_round_trip (const char *text, struct ohbox_sandbox_record *r)
{
  json_t *doc = load (text);
  int ok = doc && ohbox_sandbox_record_parse (doc, r) == 0;
  json_decref (doc);
  if (!ok)
    return 0;
  char *out = dump (ohbox_sandbox_record_to_json (r));
  ok = strcmp (out, text) == 0;
  if (!ok)
    printf ("# wrote %s\n# read  %s\n", out, text);
  free (out);
  return ok;
}

static void
test_record_old_files (void)
{
  struct ohbox_sandbox_record r;
  CHECK (record_round_trip (OLD_RUNNING, &r));
  CHECK (r.present & OHBOX_RECORD_STATUS && r.status == OHBOX_STATUS_RUNNING && r.pid == 4242 && r.pid_start == 987654
         && !ohbox_sandbox_record_exited (&r) && !r.paused);
  CHECK_STR (r.started_at, "2026-11-25T08:00:01Z");
  ohbox_sandbox_record_clear (&r);
  CHECK (record_round_trip (OLD_PAUSED, &r));
  CHECK (r.paused && r.status == OHBOX_STATUS_RUNNING);
  ohbox_sandbox_record_clear (&r);
  CHECK (record_round_trip (OLD_EXITED, &r));
  CHECK (r.status == OHBOX_STATUS_EXITED && ohbox_sandbox_record_exited (&r) && r.exit_code == 137 && r.timed_out
         && !r.paused);
  CHECK_STR (r.finished_at, "2026-11-25T08:01:00Z");
  ohbox_sandbox_record_clear (&r);
}

/* The exit recorded into a running record gives the bytes the old
 * read-modify-write (json_object_update) gave, paused or not. */
static void
test_record_exit_like_old (void)
{
  static const char *const before[] = { OLD_RUNNING, OLD_PAUSED };
  for (size_t i = 0; i < 2; i++)
    {
      json_t *old = load (before[i]);
      json_t *fields = json_pack ("{s:s, s:i, s:s, s:b, s:b}", "status", "exited", "exit_code", 3, "finished_at", "T",
                                  "paused", 0, "timed_out", 0);
      json_object_update (old, fields);
      json_decref (fields);
      char *want = dump (old);

      struct ohbox_sandbox_record r;
      json_t *doc = load (before[i]);
      CHECK (ohbox_sandbox_record_parse (doc, &r) == 0);
      json_decref (doc);
      r.present |= OHBOX_RECORD_STATUS | OHBOX_RECORD_EXIT_CODE | OHBOX_RECORD_FINISHED_AT | OHBOX_RECORD_PAUSED
                   | OHBOX_RECORD_TIMED_OUT;
      r.status = OHBOX_STATUS_EXITED;
      r.exit_code = 3;
      r.finished_at = strdup ("T");
      r.paused = r.timed_out = false;
      char *got = dump (ohbox_sandbox_record_to_json (&r));
      ohbox_sandbox_record_clear (&r);
      int same = strcmp (got, want) == 0;
      if (!same)
        printf ("# got  %s\n# want %s\n", got, want);
      free (got);
      free (want);
      CHECK (same, "before: %s", before[i]);
    }
}

static void
test_record_unknown_kept (void)
{
  /* Keys of other versions (labels, annotations, teardown records), a
   * status word this one does not know, a known key of the wrong type. */
  const char *text = "{\"status\":\"restarting\",\"labels\":{\"a\":\"b\"},\"pid\":7,\"pid_start\":8,"
                     "\"started_at\":\"S\",\"teardown\":[{\"step\":\"net\",\"done\":true}],\"paused\":\"no\"}";
  struct ohbox_sandbox_record r;
  CHECK (record_round_trip (text, &r));
  CHECK (!(r.present & OHBOX_RECORD_STATUS) && !(r.present & OHBOX_RECORD_PAUSED) && !r.paused);
  CHECK_STR (r.status_unknown, "restarting");
  r.present |= OHBOX_RECORD_STATUS | OHBOX_RECORD_EXIT_CODE;
  r.status = OHBOX_STATUS_EXITED;
  r.exit_code = 255;
  char *out = dump (ohbox_sandbox_record_to_json (&r));
  ohbox_sandbox_record_clear (&r);
  CHECK_STR (out, "{\"status\":\"exited\",\"labels\":{\"a\":\"b\"},\"pid\":7,\"pid_start\":8,"
                  "\"started_at\":\"S\",\"teardown\":[{\"step\":\"net\",\"done\":true}],\"paused\":\"no\","
                  "\"exit_code\":255}");
  free (out);
  json_t *arr = load ("[1]");
  CHECK (ohbox_sandbox_record_parse (arr, &r) < 0, "not an object");
  json_decref (arr);
}

static void
test_config (void)
{
  struct ohbox_sandbox_config c;
  json_t *doc = load (OLD_CONFIG);
  CHECK (doc && ohbox_sandbox_config_parse (doc, &c) == 0);
  json_decref (doc);
  CHECK_STR (c.name, "web");
  CHECK_STR (c.image_id, "sha256:aa");
  CHECK (c.command && strcmp (c.command[0], "sleep") == 0 && strcmp (c.command[1], "100") == 0 && c.command[2] == NULL);
  CHECK (!c.rm && c.detached && !c.tty && c.stop_signal == SIGTERM && c.storage_size == 0);
  char *out = dump (ohbox_sandbox_config_to_json (&c));
  ohbox_sandbox_config_clear (&c);
  CHECK_STR (out, OLD_CONFIG);
  free (out);

  /* A new one written as the old json_pack did: name null, storage_size
   * last and only when set. */
  char *argv[] = { "sh", NULL };
  struct ohbox_sandbox_config n = {
    .present = OHBOX_CONFIG_ID | OHBOX_CONFIG_NAME | OHBOX_CONFIG_IMAGE | OHBOX_CONFIG_IMAGE_ID | OHBOX_CONFIG_COMMAND
               | OHBOX_CONFIG_CREATED | OHBOX_CONFIG_RM | OHBOX_CONFIG_DETACHED | OHBOX_CONFIG_STORE
               | OHBOX_CONFIG_STOP_SIGNAL | OHBOX_CONFIG_TTY | OHBOX_CONFIG_STORAGE_SIZE,
    .id = "x",
    .image = "i",
    .image_id = "d",
    .command = argv,
    .created = "c",
    .rm = true,
    .store = "/s",
    .stop_signal = 9,
    .tty = true,
    .storage_size = 1 << 24,
  };
  out = dump (ohbox_sandbox_config_to_json (&n));
  CHECK_STR (out, "{\"id\":\"x\",\"name\":null,\"image\":\"i\",\"image_id\":\"d\",\"command\":[\"sh\"],"
                  "\"created\":\"c\",\"rm\":true,\"detached\":false,\"store\":\"/s\",\"stop_signal\":9,"
                  "\"tty\":true,\"storage_size\":16777216}");
  free (out);

  const char *extra = "{\"id\":\"x\",\"annotations\":{\"k\":\"v\"},\"name\":null,\"rm\":true,\"future\":[1,2]}";
  doc = load (extra);
  CHECK (ohbox_sandbox_config_parse (doc, &c) == 0);
  json_decref (doc);
  CHECK (c.name == NULL && (c.present & OHBOX_CONFIG_NAME) && c.rm && !(c.present & OHBOX_CONFIG_IMAGE));
  out = dump (ohbox_sandbox_config_to_json (&c));
  ohbox_sandbox_config_clear (&c);
  CHECK_STR (out, extra);
  free (out);
}

/* What ps prints for INFO with state.json RECORD. */
static char *
ps_json (enum ohbox_sandbox_status status, const char *record, const char *network)
{
  struct ohbox_sandbox_info info = { .status = status };
  snprintf (info.id, sizeof info.id, "%s", ID);
  json_t *doc = load (OLD_CONFIG);
  ohbox_sandbox_config_parse (doc, &info.config);
  json_decref (doc);
  doc = load (record);
  ohbox_sandbox_record_parse (doc, &info.record);
  json_decref (doc);
  info.network = network ? load (network) : NULL;
  char *out = dump (ohbox_sandbox_info_to_json (&info));
  ohbox_sandbox_info_clear (&info);
  return out;
}

#define PS_HEAD                                                                                                        \
  "{\"id\":\"" ID "\",\"name\":\"web\",\"image\":\"busybox:latest\",\"image_id\":\"sha256:aa\","                       \
  "\"command\":[\"sleep\",\"100\"],\"created\":\"2026-11-25T08:00:00Z\",\"devices\":null,"
#define PS_TAIL ",\"labels\":{},\"annotations\":{}}"

static void
test_ps_json (void)
{
  char *s = ps_json (OHBOX_STATUS_RUNNING, OLD_RUNNING,
                     "{\"mode\":\"bridge\",\"active\":true,\"ip\":\"10.88.0.2\",\"ports\":[]}");
  CHECK_STR (s, PS_HEAD "\"status\":\"running\",\"pid\":4242,\"started_at\":\"2026-11-25T08:00:01Z\","
                        "\"exit_code\":null,\"finished_at\":null,\"timed_out\":false,\"ip\":\"10.88.0.2\","
                        "\"ports\":[],\"network\":\"bridge\"" PS_TAIL);
  free (s);
  s = ps_json (OHBOX_STATUS_PAUSED, OLD_PAUSED, "{\"mode\":\"pasta\",\"active\":false}");
  CHECK_STR (s, PS_HEAD "\"status\":\"paused\",\"pid\":4242,\"started_at\":\"2026-11-25T08:00:01Z\","
                        "\"exit_code\":null,\"finished_at\":null,\"timed_out\":false,\"network\":\"pasta\"" PS_TAIL);
  free (s);
  s = ps_json (OHBOX_STATUS_EXITED, OLD_EXITED, NULL);
  CHECK_STR (s, PS_HEAD "\"status\":\"exited\",\"pid\":null,\"started_at\":\"2026-11-25T08:00:01Z\","
                        "\"exit_code\":137,\"finished_at\":\"2026-11-25T08:01:00Z\",\"timed_out\":true,"
                        "\"network\":\"none\"" PS_TAIL);
  free (s);
  s = ps_json (OHBOX_STATUS_CREATED, "{}", "{\"active\":true}");
  CHECK_STR (s, PS_HEAD
             "\"status\":\"created\",\"pid\":null,\"started_at\":null,\"exit_code\":null,"
             "\"finished_at\":null,\"timed_out\":false,\"ip\":null,\"ports\":null,\"network\":\"bridge\"" PS_TAIL);
  free (s);
}

UNIT_MAIN_BEGIN ("test-state")
RUN_TEST (test_status_names);
RUN_TEST (test_record_old_files);
RUN_TEST (test_record_exit_like_old);
RUN_TEST (test_record_unknown_kept);
RUN_TEST (test_config);
RUN_TEST (test_ps_json);
UNIT_MAIN_END
