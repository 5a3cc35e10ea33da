/* test-cdi.c: YAML read into JSON values (yaml_json.h), CDI specs from JSON
 * and YAML files (devices.h): edits of named devices, `=all`, spec-level
 * edits, priorities of folders, and the errors a user sees for a malformed
 * spec, an unknown device, a device defined twice, a field newer than the
 * file's cdiVersion; `--device HOSTPATH[:CTRPATH][:rwm]`.  Device nodes are
 * the host's /dev/null, /dev/zero and /dev/full, which exist everywhere. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/utils.h"
#include "common/yaml_json.h"
#include "devices/devices.h"
#include "unit.h"

static char *tmp_root;

/* A fresh folder under the test's temporary directory. */
static char *
new_dir (const char *name)
{
  char *d = xasprintf ("%s/%s", tmp_root, name);
  cleanup_free char *cmd = xasprintf ("rm -rf '%s' && mkdir -p '%s'", d, d);
  if (system (cmd) != 0)
    abort ();
  return d;
}

static void
test_yaml_values (void)
{
  cleanup_error ohbox_error_t err = NULL;
  const char *y = "a: 1\nb: \"1\"\nc: 0644\nd: 0x10\ne: true\nf: ~\ng: [x, 'y', 2.5]\nh:\n  - k: v\ni: !!str 12\n";
  json_t *v = ohbox_yaml_to_json (y, strlen (y), "t.yaml", &err);
  CHECK (v != NULL, "%s", err ? err->msg : "");
  CHECK (json_integer_value (json_object_get (v, "a")) == 1);
  CHECK (json_is_string (json_object_get (v, "b")), "a quoted scalar stays a string");
  CHECK (json_integer_value (json_object_get (v, "c")) == 0644, "YAML 1.1 octal");
  CHECK (json_integer_value (json_object_get (v, "d")) == 16);
  CHECK (json_is_true (json_object_get (v, "e")));
  CHECK (json_is_null (json_object_get (v, "f")));
  CHECK (json_array_size (json_object_get (v, "g")) == 3);
  CHECK (json_is_real (json_array_get (json_object_get (v, "g"), 2)));
  CHECK_STR (json_string_value (json_object_get (json_array_get (json_object_get (v, "h"), 0), "k")), "v");
  CHECK_STR (json_string_value (json_object_get (v, "i")), "12");
  json_decref (v);
}

static void
test_yaml_refused (void)
{
  static const char *const bad[][2] = {
    { "a: &x [1, 2]\nb: *x\n", "aliases" },
    { "a: 1\na: 2\n", "appears twice" },
    { "a: 1\n---\nb: 2\n", "more than one YAML document" },
    { "a: [1, 2\n", "line" },
    { "", "no YAML document" },
    { "? [a]\n: 1\n", "mapping key" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    {
      cleanup_error ohbox_error_t err = NULL;
      json_t *v = ohbox_yaml_to_json (bad[i][0], strlen (bad[i][0]), "bad.yaml", &err);
      CHECK (v == NULL, "case %zu parsed", i);
      CHECK (strstr (err->msg, "bad.yaml") != NULL && strstr (err->msg, bad[i][1]) != NULL, "case %zu: %s", i,
             err->msg);
    }
  /* Nesting is bounded. */
  char deep[400];
  memset (deep, '[', 200);
  memset (deep + 200, ']', 199);
  deep[399] = '\0';
  cleanup_error ohbox_error_t err = NULL;
  CHECK (ohbox_yaml_to_json (deep, strlen (deep), "deep.yaml", &err) == NULL);
  CHECK (strstr (err->msg, "64 levels") != NULL, "%s", err->msg);
}

static const char json_spec[] =
  "{\n"
  "  \"cdiVersion\": \"0.6.0\",\n"
  "  \"kind\": \"example.com/card\",\n"
  "  \"containerEdits\": { \"env\": [\"CARD_DRIVER=1\"] },\n"
  "  \"devices\": [\n"
  "    { \"name\": \"card0\", \"containerEdits\": {\n"
  "        \"env\": [\"CARD=0\"],\n"
  "        \"deviceNodes\": [ { \"path\": \"/dev/card0\", \"hostPath\": \"/dev/null\","
  " \"permissions\": \"rw\" } ],\n"
  "        \"mounts\": [ { \"hostPath\": \"/etc/hostname\", \"containerPath\": "
  "\"/etc/card\", \"options\": [\"ro\", \"bind\"] } ],\n"
  "        \"hooks\": [ { \"hookName\": \"createContainer\", \"path\": \"/bin/true\","
  " \"args\": [\"true\", \"card0\"], \"timeout\": 5 } ] } },\n"
  "    { \"name\": \"card1\", \"containerEdits\": {\n"
  "        \"env\": [\"CARD=1\"],\n"
  "        \"deviceNodes\": [ { \"path\": \"/dev/card1\", \"hostPath\": \"/dev/zero\" } ] } }\n"
  "  ]\n"
  "}\n";

static const char yaml_spec[] = "cdiVersion: 0.5.0\n"
                                "kind: example.com/gauge\n"
                                "devices:\n"
                                "  - name: g0\n"
                                "    containerEdits:\n"
                                "      deviceNodes:\n"
                                "        - path: /dev/gauge0\n"
                                "          hostPath: /dev/full\n"
                                "          fileMode: 0640\n"
                                "          uid: 1000\n"
                                "      env: [GAUGE=0]\n";

static void
test_resolve_json_and_yaml (void)
{
  cleanup_error ohbox_error_t err = NULL;
  cleanup_free char *dir = new_dir ("specs");
  unit_put_file (dir, "card.json", json_spec);
  unit_put_file (dir, "gauge.yaml", yaml_spec);
  unit_put_file (dir, "notes.txt", "not a spec: ignored");
  const char *dirs[] = { dir, NULL };
  const char *names[] = { "example.com/card=card0", "example.com/gauge=g0" };
  struct ohbox_device_edits e = { 0 };
  CHECK (ohbox_cdi_resolve (dirs, names, 2, &e, &err) == 0, "%s", err ? err->msg : "");
  CHECK (e.n_names == 2);
  CHECK (e.n_nodes == 2);
  struct stat st;
  CHECK (stat ("/dev/null", &st) == 0);
  CHECK_STR (e.nodes[0].path, "/dev/card0");
  CHECK_STR (e.nodes[0].host_path, "/dev/null");
  CHECK (e.nodes[0].type == 'c' && e.nodes[0].major == major (st.st_rdev) && e.nodes[0].minor == minor (st.st_rdev));
  CHECK_STR (e.nodes[0].access, "rw");
  CHECK ((e.nodes[0].file_mode & 0777) == (st.st_mode & 0777), "mode from the host node");
  CHECK_STR (e.nodes[1].path, "/dev/gauge0");
  CHECK (e.nodes[1].file_mode == 0640 && e.nodes[1].has_uid && e.nodes[1].uid == 1000 && !e.nodes[1].has_gid);
  CHECK_STR (e.nodes[1].access, "rwm");
  CHECK (e.n_env == 3);
  CHECK_STR (e.env[0], "CARD=0");
  CHECK_STR (e.env[1], "CARD_DRIVER=1");
  CHECK_STR (e.env[2], "GAUGE=0");
  CHECK (e.n_mounts == 1);
  CHECK_STR (e.mounts[0].container_path, "/etc/card");
  CHECK_STR (e.mounts[0].options[0], "ro");
  CHECK (e.n_hooks == 1 && e.hooks[0].stage == OHBOX_HOOK_CREATE_CONTAINER && e.hooks[0].timeout == 5);
  CHECK_STR (e.hooks[0].args[1], "card0");
  ohbox_device_edits_free (&e);
}

static void
test_resolve_all (void)
{
  cleanup_error ohbox_error_t err = NULL;
  cleanup_free char *dir = new_dir ("all");
  unit_put_file (dir, "card.json", json_spec);
  const char *dirs[] = { dir, NULL };
  const char *names[] = { "example.com/card=all" };
  struct ohbox_device_edits e = { 0 };
  CHECK (ohbox_cdi_resolve (dirs, names, 1, &e, &err) == 0, "%s", err ? err->msg : "");
  CHECK (e.n_nodes == 2 && e.n_names == 2);
  CHECK_STR (e.names[0], "example.com/card=card0");
  CHECK_STR (e.names[1], "example.com/card=card1");
  /* The spec-level env once; CARD set by both devices, the last wins. */
  CHECK (e.n_env == 2);
  CHECK_STR (e.env[0], "CARD=1");
  ohbox_device_edits_free (&e);
}

static void
test_priorities_and_conflicts (void)
{
  cleanup_free char *low = new_dir ("low"), *high = new_dir ("high");
  unit_put_file (low, "a.yaml", yaml_spec);
  /* The same device, another node, in a later folder: it wins. */
  cleanup_free char *other = xstrdup (yaml_spec);
  memcpy (strstr (other, "/dev/full"), "/dev/zero", 9);
  unit_put_file (high, "a.yaml", other);
  const char *dirs[] = { low, high, NULL };
  const char *names[] = { "example.com/gauge=g0" };
  struct ohbox_device_edits e = { 0 };
  {
    cleanup_error ohbox_error_t err = NULL;
    CHECK (ohbox_cdi_resolve (dirs, names, 1, &e, &err) == 0, "%s", err ? err->msg : "");
    CHECK_STR (e.nodes[0].host_path, "/dev/zero");
    ohbox_device_edits_free (&e);
  }
  /* Two files of one folder define it: an error naming both. */
  unit_put_file (high, "b.yaml", other);
  {
    cleanup_error ohbox_error_t err = NULL;
    CHECK (ohbox_cdi_resolve (dirs, names, 1, &e, &err) < 0);
    CHECK (strstr (err->msg, "defined twice") && strstr (err->msg, "a.yaml") && strstr (err->msg, "b.yaml"), "%s",
           err->msg);
    ohbox_device_edits_free (&e);
  }
}

/* A malformed spec: the error names the file and the field. */
static void
expect_spec_error (const char *spec, const char *request, const char *want)
{
  cleanup_error ohbox_error_t err = NULL;
  cleanup_free char *dir = new_dir ("bad");
  unit_put_file (dir, "bad.yaml", spec);
  const char *dirs[] = { dir, NULL };
  struct ohbox_device_edits e = { 0 };
  int rc = ohbox_cdi_resolve (dirs, &request, 1, &e, &err);
  ohbox_device_edits_free (&e);
  CHECK (rc < 0, "`%s` accepted", want);
  CHECK (strstr (err->msg, want) != NULL, "want `%s`, got: %s", want, err->msg);
}

static void
test_spec_errors (void)
{
  const char *g0 = "example.com/gauge=g0";
  expect_spec_error ("cdiVersion: 0.5.0\nkind: example.com/gauge\ndevices:\n  - name: g0\n    containerEdits:\n"
                     "      env: [A=1]\n      color: red\n",
                     g0, "bad.yaml`: devices[0].containerEdits.color: unknown field");
  expect_spec_error ("cdiVersion: 0.4.0\nkind: example.com/gauge\ndevices:\n  - name: g0\n    containerEdits:\n"
                     "      deviceNodes:\n        - path: /dev/g\n          hostPath: /dev/null\n",
                     g0, "devices[0].containerEdits.deviceNodes[0].hostPath: needs cdiVersion 0.5.0");
  expect_spec_error ("cdiVersion: 1.0.0\nkind: example.com/gauge\ndevices:\n  - name: g0\n    containerEdits:\n"
                     "      env: [A=1]\n",
                     g0, "cdiVersion 1.0.0 is not supported");
  expect_spec_error ("cdiVersion: 0.5.0\nkind: gauge\ndevices:\n  - name: g0\n    containerEdits:\n      env: [A=1]\n",
                     "example.com/other=x", "kind: must be VENDOR/CLASS");
  expect_spec_error ("cdiVersion: 0.5.0\nkind: example.com/gauge\ndevices:\n  - name: g0\n    containerEdits:\n"
                     "      deviceNodes:\n        - path: dev/g\n",
                     g0, "deviceNodes[0].path: must be an absolute path");
  expect_spec_error ("cdiVersion: 0.5.0\nkind: example.com/gauge\ndevices:\n  - name: g0\n    containerEdits:\n"
                     "      deviceNodes:\n        - path: /dev/g\n          hostPath: /etc/hostname\n",
                     g0, "is not a device node");
  expect_spec_error ("cdiVersion: 0.5.0\nkind: example.com/gauge\ndevices:\n  - name: g0\n    containerEdits:\n"
                     "      hooks:\n        - hookName: whenever\n          path: /bin/true\n",
                     g0, "hookName must be one of");
  expect_spec_error ("cdiVersion: 0.5.0\nkind: example.com/gauge\ndevices:\n  - name: g0\n    containerEdits:\n"
                     "      env: [NOVALUE]\n",
                     g0, "`NOVALUE` is not KEY=VALUE");
  expect_spec_error ("cdiVersion: 0.5.0\nkind: example.com/gauge\ndevices:\n  - name: g0\n    containerEdits: {}\n", g0,
                     "missing or empty");
  expect_spec_error ("cdiVersion: 0.5.0\nkind: example.com/gauge\ndevices:\n  - name: g0\n    containerEdits:\n"
                     "      deviceNodes:\n        - path: /dev/g\n          hostPath: /dev/null\n          major: 1\n"
                     "          minor: 99\n",
                     g0, "the spec says 1:99");
  expect_spec_error ("cdiVersion: 0.7.0\nkind: example.com/gauge\ndevices:\n  - name: g0\n    containerEdits:\n"
                     "      intelRdt: { closID: x }\n",
                     g0, "intelRdt is not supported");
  expect_spec_error ("cdiVersion: [0.5.0\n", g0, "bad.yaml: line");
}

static void
test_unknown_and_unrelated (void)
{
  cleanup_free char *dir = new_dir ("mixed");
  unit_put_file (dir, "gauge.yaml", yaml_spec);
  /* A broken spec of another kind does not take gauge away. */
  unit_put_file (dir, "zz.yaml", "cdiVersion: 0.5.0\nkind: other.org/x\ndevices: []\n");
  const char *dirs[] = { dir, NULL };
  struct ohbox_device_edits e = { 0 };
  {
    cleanup_error ohbox_error_t err = NULL;
    const char *n[] = { "example.com/gauge=g0" };
    CHECK (ohbox_cdi_resolve (dirs, n, 1, &e, &err) == 0, "%s", err ? err->msg : "");
    ohbox_device_edits_free (&e);
  }
  {
    cleanup_error ohbox_error_t err = NULL;
    const char *n[] = { "example.com/gauge=g7" };
    CHECK (ohbox_cdi_resolve (dirs, n, 1, &e, &err) < 0);
    CHECK (err->kind == OHBOX_ERR_NOT_FOUND);
    CHECK (strstr (err->msg, "`example.com/gauge=g7` is not defined by any spec") != NULL, "%s", err->msg);
    ohbox_device_edits_free (&e);
  }
  {
    cleanup_error ohbox_error_t err = NULL;
    const char *n[] = { "other.org/x=a" };
    CHECK (ohbox_cdi_resolve (dirs, n, 1, &e, &err) < 0);
    CHECK (strstr (err->msg, "zz.yaml") && strstr (err->msg, "devices: must be a list of at least one"), "%s",
           err->msg);
    ohbox_device_edits_free (&e);
  }
  {
    cleanup_error ohbox_error_t err = NULL;
    const char *n[] = { "gauge" };
    CHECK (ohbox_cdi_resolve (dirs, n, 1, &e, &err) < 0);
    CHECK (strstr (err->msg, "not a CDI device name") != NULL, "%s", err->msg);
    ohbox_device_edits_free (&e);
  }
}

static void
test_host_device (void)
{
  struct ohbox_device_edits e = { 0 };
  cleanup_error ohbox_error_t err = NULL;
  CHECK (ohbox_device_parse_host ("/dev/null", &e, &err) == 0, "%s", err ? err->msg : "");
  CHECK (ohbox_device_parse_host ("/dev/zero:/dev/z:r", &e, &err) == 0, "%s", err ? err->msg : "");
  CHECK (ohbox_device_parse_host ("/dev/full:rw", &e, &err) == 0, "%s", err ? err->msg : "");
  CHECK (e.n_nodes == 3);
  CHECK_STR (e.nodes[0].path, "/dev/null");
  CHECK_STR (e.nodes[0].access, "rwm");
  CHECK_STR (e.nodes[1].path, "/dev/z");
  CHECK_STR (e.nodes[1].access, "r");
  CHECK_STR (e.nodes[2].path, "/dev/full");
  CHECK_STR (e.nodes[2].access, "rw");
  /* The same node again is one node with the union of accesses. */
  CHECK (ohbox_device_parse_host ("/dev/zero:/dev/z:w", &e, &err) == 0);
  CHECK (e.n_nodes == 3);
  CHECK_STR (e.nodes[1].access, "rw");
  /* Another device at the same path is an error. */
  CHECK (ohbox_device_parse_host ("/dev/null:/dev/z", &e, &err) < 0);
  CHECK (strstr (err->msg, "two devices want `/dev/z`") != NULL, "%s", err->msg);
  ohbox_error_release (&err);
  CHECK (ohbox_device_parse_host ("/etc/hostname", &e, &err) < 0);
  CHECK (strstr (err->msg, "not a device node") != NULL, "%s", err->msg);
  ohbox_error_release (&err);
  CHECK (ohbox_device_parse_host ("/dev/null:/a:rx", &e, &err) < 0);
  CHECK (strstr (err->msg, "not a permission set") != NULL, "%s", err->msg);
  ohbox_error_release (&err);
  CHECK (ohbox_device_parse_host ("dev/null", &e, &err) < 0);
  ohbox_error_release (&err);
  CHECK (ohbox_device_parse_host ("/dev/nonexistent-ohbox", &e, &err) < 0);
  CHECK (err->kind == OHBOX_ERR_NOT_FOUND);
  ohbox_device_edits_free (&e);
}

static void
test_qualified_names (void)
{
  CHECK (ohbox_cdi_is_qualified_name ("nvidia.com/gpu=0"));
  CHECK (ohbox_cdi_is_qualified_name ("vendor.com/class=all"));
  CHECK (ohbox_cdi_is_qualified_name ("foo.bar.baz/foo-bar123.B_az=GPU-1:mig"));
  CHECK (!ohbox_cdi_is_qualified_name ("/dev/null"));
  CHECK (!ohbox_cdi_is_qualified_name ("vendor.com/class"));
  CHECK (!ohbox_cdi_is_qualified_name ("vendor.com/class/x=a"));
  CHECK (!ohbox_cdi_is_qualified_name ("vendor.com/=a"));
  CHECK (!ohbox_cdi_is_qualified_name ("vendor.com/class=-a"));
}

UNIT_MAIN_BEGIN ("test-cdi")
char tmpl[] = "/tmp/ohbox-test-cdi.XXXXXX";
if (unit_mkdtemp (tmpl) < 0)
  return 1;
tmp_root = tmpl;
RUN_TEST (test_yaml_values);
RUN_TEST (test_yaml_refused);
RUN_TEST (test_resolve_json_and_yaml);
RUN_TEST (test_resolve_all);
RUN_TEST (test_priorities_and_conflicts);
RUN_TEST (test_spec_errors);
RUN_TEST (test_unknown_and_unrelated);
RUN_TEST (test_host_device);
RUN_TEST (test_qualified_names);
{
  cleanup_free char *cmd = xasprintf ("rm -rf '%s'", tmp_root);
  if (system (cmd) != 0)
    return 1;
}
UNIT_MAIN_END
