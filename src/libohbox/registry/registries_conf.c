/* registries_conf.c: containers-registries.conf(5), the subset in
 * registries_conf.h, over the TOML subset parser of toml_subset.c.
 *
 * Keys and tables the format does not define are refused with FILE:LINE
 * like syntax errors: a misspelt `blocked` must not silently unblock a
 * registry. */
#include "config.h"
#include "registry/registries_conf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "registry/reference.h"
#include "common/toml_subset.h"
#include "common/utils.h"

/* Limits on what a file may make us allocate. */
#define CONF_FILE_MAX (1024 * 1024)
#define ENTRIES_MAX 1000
#define MIRRORS_MAX 100
#define ALIASES_MAX 4096
#define DROPINS_MAX 100

/* ------------------------------------------------------ file semantics */

enum section
{
  SEC_ROOT,
  SEC_REGISTRY,
  SEC_MIRROR,
  SEC_REGISTRIES, /* [registries], parent of the v1 tables */
  SEC_V1_SEARCH,
  SEC_V1_INSECURE,
  SEC_V1_BLOCK,
  SEC_ALIASES,
};

enum key_id
{
  K_SEARCH,
  K_CRED_HELPERS,
  K_ALS_HELPER,
  K_SHORT_NAME_MODE,
  K_PREFIX,
  K_LOCATION,
  K_INSECURE,
  K_BLOCKED,
  K_BY_DIGEST,
  K_M_LOCATION,
  K_M_INSECURE,
  K_PULL_FROM_MIRROR,
  K_V1_REGISTRIES,
};

static const struct
{
  enum section sec;
  const char *name;
  enum toml_type type;
} known_keys[] = {
  [K_SEARCH] = { SEC_ROOT, "unqualified-search-registries", TOML_ARRAY },
  [K_CRED_HELPERS] = { SEC_ROOT, "credential-helpers", TOML_ARRAY },
  [K_ALS_HELPER] = { SEC_ROOT, "additional-layer-store-auth-helper", TOML_STRING },
  [K_SHORT_NAME_MODE] = { SEC_ROOT, "short-name-mode", TOML_STRING },
  [K_PREFIX] = { SEC_REGISTRY, "prefix", TOML_STRING },
  [K_LOCATION] = { SEC_REGISTRY, "location", TOML_STRING },
  [K_INSECURE] = { SEC_REGISTRY, "insecure", TOML_BOOL },
  [K_BLOCKED] = { SEC_REGISTRY, "blocked", TOML_BOOL },
  [K_BY_DIGEST] = { SEC_REGISTRY, "mirror-by-digest-only", TOML_BOOL },
  [K_M_LOCATION] = { SEC_MIRROR, "location", TOML_STRING },
  [K_M_INSECURE] = { SEC_MIRROR, "insecure", TOML_BOOL },
  [K_PULL_FROM_MIRROR] = { SEC_MIRROR, "pull-from-mirror", TOML_STRING },
  [K_V1_REGISTRIES] = { SEC_V1_SEARCH, "registries", TOML_ARRAY },
};

struct parse_state
{
  const char *file;
  struct ohbox_registries_conf *c;
  enum section sec;
  unsigned keys_seen;   /* bits of enum key_id set in the current table */
  unsigned tables_seen; /* bits of enum section defined once already */
  int registry_line;    /* line of the open [[registry]], 0 when none */
  int mirror_line;      /* line of the open [[registry.mirror]], 0 when none */
  bool search_set;      /* unqualified-search-registries given (drop-in merge) */
  bool v1_used;
  struct toml_value v1[3]; /* search, insecure, block */
};

#define conf_error(st, line, err, ...) ohbox_toml_error (err, (st)->file, line, __VA_ARGS__)

static void
endpoint_clear (struct ohbox_registry_endpoint *e)
{
  free (e->location);
  e->location = NULL;
}

static void
entry_clear (struct ohbox_registry_entry *e)
{
  free (e->prefix);
  free (e->location);
  for (size_t i = 0; i < e->n_mirrors; i++)
    endpoint_clear (&e->mirrors[i]);
  free (e->mirrors);
  memset (e, 0, sizeof *e);
}

void
ohbox_registries_conf_free (struct ohbox_registries_conf *c)
{
  if (c == NULL)
    return;
  for (char **s = c->unqualified_search; s && *s; s++)
    free (*s);
  free (c->unqualified_search);
  for (size_t i = 0; i < c->n_entries; i++)
    entry_clear (&c->entries[i]);
  free (c->entries);
  for (size_t i = 0; i < c->n_aliases; i++)
    {
      free (c->aliases[i].name);
      free (c->aliases[i].value);
    }
  free (c->aliases);
  free (c);
}

static struct ohbox_registries_conf *
conf_new (void)
{
  struct ohbox_registries_conf *c = xcalloc (1, sizeof *c);
  c->unqualified_search = xcalloc (1, sizeof (char *));
  return c;
}

/* host[:port][/path] as the reference grammar has it; NULL when valid. */
static const char *
location_error (const char *s)
{
  if (strstr (s, "://"))
    return "URI schemes are not supported: write host[:port][/path]";
  const char *slash = strchr (s, '/');
  size_t host_len = slash ? (size_t) (slash - s) : strlen (s);
  if (!ohbox_reference_valid_domain (s, host_len))
    return "not a valid host[:port][/path]";
  if (slash && strpbrk (slash, ":@"))
    return "a tag or a digest is not supported here";
  if (slash && !ohbox_reference_valid_path (slash + 1, strlen (slash + 1)))
    return "the path must be lowercase components separated by `/`";
  return NULL;
}

static bool
is_wildcard (const char *prefix)
{
  return prefix[0] == '*';
}

/* Trailing slashes are dropped, as containers/image does. */
static void
trim_slashes (char *s)
{
  size_t n = strlen (s);
  while (n > 0 && s[n - 1] == '/')
    s[--n] = '\0';
}

static int
finish_mirror (struct parse_state *st, ohbox_error_t *err)
{
  if (st->mirror_line == 0)
    return 0;
  struct ohbox_registry_entry *e = &st->c->entries[st->c->n_entries - 1];
  struct ohbox_registry_endpoint *m = &e->mirrors[e->n_mirrors - 1];
  int line = st->mirror_line;
  st->mirror_line = 0;
  if (m->location == NULL || (trim_slashes (m->location), *m->location == '\0'))
    return conf_error (st, line, err, "[[registry.mirror]] without a `location`");
  const char *why = location_error (m->location);
  if (why)
    return conf_error (st, line, err, "mirror location `%s`: %s", m->location, why);
  return 0;
}

/* Checks and completes the [[registry]] being closed. */
static int
finish_registry (struct parse_state *st, ohbox_error_t *err)
{
  if (finish_mirror (st, err) < 0)
    return -1;
  if (st->registry_line == 0)
    return 0;
  struct ohbox_registry_entry *e = &st->c->entries[st->c->n_entries - 1];
  int line = st->registry_line;
  st->registry_line = 0;
  if (e->location)
    trim_slashes (e->location);
  if (e->prefix)
    trim_slashes (e->prefix);
  if ((e->prefix == NULL || *e->prefix == '\0') && (e->location == NULL || *e->location == '\0'))
    return conf_error (st, line, err, "[[registry]] needs a `prefix` or a `location`");
  if (e->prefix == NULL || *e->prefix == '\0')
    {
      free (e->prefix);
      e->prefix = xstrdup (e->location);
    }
  if (e->location && *e->location)
    {
      const char *why = location_error (e->location);
      if (why)
        return conf_error (st, line, err, "location `%s`: %s", e->location, why);
    }
  else if (!is_wildcard (e->prefix))
    {
      free (e->location);
      e->location = xstrdup (e->prefix);
    }
  if (is_wildcard (e->prefix))
    {
      /* Only "*.example.com": a subdomain wildcard, nothing after it. */
      const char *d = e->prefix + 2;
      if (e->prefix[1] != '.' || strpbrk (d, ":/[@*") || !ohbox_reference_valid_domain (d, strlen (d)))
        return conf_error (st, line, err, "wildcard prefix `%s`: only the form `*.example.com` is supported",
                           e->prefix);
    }
  else
    {
      const char *why = location_error (e->prefix);
      if (why)
        return conf_error (st, line, err, "prefix `%s`: %s", e->prefix, why);
    }
  for (size_t i = 0; e->mirror_by_digest_only && i < e->n_mirrors; i++)
    if (e->mirrors[i].digest_only || e->mirrors[i].tag_only)
      return conf_error (st, line, err, "`pull-from-mirror` cannot be used with `mirror-by-digest-only`");
  for (size_t i = 0; i + 1 < st->c->n_entries; i++)
    if (strcmp (st->c->entries[i].prefix, e->prefix) == 0)
      return conf_error (st, line, err, "prefix `%s` is defined twice", e->prefix);
  return 0;
}

static bool
path_is (char **path, size_t n, const char *a, const char *b)
{
  return n == (b ? 2u : 1u) && strcmp (path[0], a) == 0 && (b == NULL || strcmp (path[1], b) == 0);
}

static int
on_table (void *data, char **path, size_t n, bool array, int line, ohbox_error_t *err)
{
  struct parse_state *st = data;
  struct ohbox_registries_conf *c = st->c;
  bool is_mirror = array && path_is (path, n, "registry", "mirror");
  if ((is_mirror ? finish_mirror (st, err) : finish_registry (st, err)) < 0)
    return -1;
  st->keys_seen = 0;
  if (array && path_is (path, n, "registry", NULL))
    {
      if (c->n_entries == ENTRIES_MAX)
        return conf_error (st, line, err, "more than %d [[registry]] tables", ENTRIES_MAX);
      c->entries = xrealloc (c->entries, (c->n_entries + 1) * sizeof *c->entries);
      memset (&c->entries[c->n_entries++], 0, sizeof *c->entries);
      st->registry_line = line;
      st->sec = SEC_REGISTRY;
      return 0;
    }
  if (is_mirror)
    {
      if (st->registry_line == 0)
        return conf_error (st, line, err, "[[registry.mirror]] outside of a [[registry]]");
      struct ohbox_registry_entry *e = &c->entries[c->n_entries - 1];
      if (e->n_mirrors == MIRRORS_MAX)
        return conf_error (st, line, err, "more than %d mirrors for one registry", MIRRORS_MAX);
      e->mirrors = xrealloc (e->mirrors, (e->n_mirrors + 1) * sizeof *e->mirrors);
      memset (&e->mirrors[e->n_mirrors++], 0, sizeof *e->mirrors);
      st->mirror_line = line;
      st->sec = SEC_MIRROR;
      return 0;
    }
  const char *name = n > 1 ? path[1] : "";
  const char *dot = n > 1 ? "." : "";
  if (array)
    return conf_error (st, line, err, "unknown array of tables `[[%s%s%s]]`", path[0], dot, name);
  enum section sec;
  if (path_is (path, n, "aliases", NULL))
    sec = SEC_ALIASES;
  else if (path_is (path, n, "registries", NULL))
    sec = SEC_REGISTRIES;
  else if (path_is (path, n, "registries", "search"))
    sec = SEC_V1_SEARCH;
  else if (path_is (path, n, "registries", "insecure"))
    sec = SEC_V1_INSECURE;
  else if (path_is (path, n, "registries", "block"))
    sec = SEC_V1_BLOCK;
  else if (path_is (path, n, "registry", NULL))
    return conf_error (st, line, err, "[registry] must be written [[registry]] (an array of tables)");
  else
    return conf_error (st, line, err, "unknown table `[%s%s%s]`", path[0], dot, name);
  if (st->tables_seen & (1u << sec))
    return conf_error (st, line, err, "table `[%s%s%s]` is defined twice", path[0], dot, name);
  st->tables_seen |= 1u << sec;
  st->sec = sec;
  return 0;
}

static int
set_alias (struct parse_state *st, const char *key, struct toml_value *v, int line, ohbox_error_t *err)
{
  struct ohbox_registries_conf *c = st->c;
  if (v->type != TOML_STRING)
    return conf_error (st, line, err, "alias `%s`: the value must be a string", key);
  if (!ohbox_reference_valid_path (key, strlen (key)))
    return conf_error (st, line, err, "alias `%s`: not a short name (lowercase, no registry, tag or digest)", key);
  const char *why = location_error (v->s);
  if (*v->s && (why || strchr (v->s, '/') == NULL))
    return conf_error (st, line, err, "alias `%s`: `%s` is not registry/repository%s%s", key, v->s, why ? ": " : "",
                       why ? why : "");
  for (size_t i = 0; i < c->n_aliases; i++)
    if (strcmp (c->aliases[i].name, key) == 0)
      return conf_error (st, line, err, "alias `%s` is defined twice", key);
  if (c->n_aliases == ALIASES_MAX)
    return conf_error (st, line, err, "more than %d aliases", ALIASES_MAX);
  c->aliases = xrealloc (c->aliases, (c->n_aliases + 1) * sizeof *c->aliases);
  c->aliases[c->n_aliases].name = xstrdup (key);
  c->aliases[c->n_aliases++].value = steal_pointer (&v->s);
  return 0;
}

static bool
one_of (const char *s, const char *const *list)
{
  for (; *list; list++)
    if (strcmp (s, *list) == 0)
      return true;
  return false;
}

static int
on_keyval (void *data, const char *key, struct toml_value *v, int line, ohbox_error_t *err)
{
  struct parse_state *st = data;
  if (st->sec == SEC_ALIASES)
    return set_alias (st, key, v, line, err);
  /* The three v1 tables share their one key. */
  enum section sec = st->sec == SEC_V1_INSECURE || st->sec == SEC_V1_BLOCK ? SEC_V1_SEARCH : st->sec;
  size_t id;
  for (id = 0; id < sizeof known_keys / sizeof known_keys[0]; id++)
    if (known_keys[id].sec == sec && strcmp (known_keys[id].name, key) == 0)
      break;
  if (id == sizeof known_keys / sizeof known_keys[0])
    return conf_error (st, line, err, "unknown key `%s`%s", key,
                       st->sec == SEC_ROOT       ? ""
                       : st->sec == SEC_MIRROR   ? " in [[registry.mirror]]"
                       : st->sec == SEC_REGISTRY ? " in [[registry]]"
                                                 : " in this table");
  if (st->keys_seen & (1u << id))
    return conf_error (st, line, err, "key `%s` is set twice", key);
  st->keys_seen |= 1u << id;
  if (v->type != known_keys[id].type)
    return conf_error (st, line, err, "`%s` must be %s", key,
                       known_keys[id].type == TOML_BOOL     ? "true or false"
                       : known_keys[id].type == TOML_STRING ? "a string"
                                                            : "an array of strings");

  struct ohbox_registries_conf *c = st->c;
  struct ohbox_registry_entry *e = c->n_entries ? &c->entries[c->n_entries - 1] : NULL;
  struct ohbox_registry_endpoint *m = e && e->n_mirrors ? &e->mirrors[e->n_mirrors - 1] : NULL;
  static const char *const modes[] = { "", "enforcing", "permissive", "disabled", NULL };
  static const char *const pulls[] = { "", "all", "digest-only", "tag-only", NULL };
  switch ((enum key_id) id)
    {
    case K_SEARCH:
      for (size_t i = 0; i < v->n; i++)
        {
          trim_slashes (v->items[i]);
          if (!ohbox_reference_valid_domain (v->items[i], strlen (v->items[i])))
            return conf_error (st, line, err, "unqualified-search-registries: `%s` is not a host[:port]", v->items[i]);
        }
      free (c->unqualified_search);
      c->unqualified_search = steal_pointer (&v->items);
      v->n = 0;
      st->search_set = true;
      break;
    case K_CRED_HELPERS:
    case K_ALS_HELPER:
      break; /* credentials come from ohbox's auth file; helpers are not run */
    case K_SHORT_NAME_MODE:
      if (!one_of (v->s, modes))
        return conf_error (st, line, err, "short-name-mode must be enforcing, permissive or disabled");
      break;
    case K_PREFIX:
      e->prefix = steal_pointer (&v->s);
      break;
    case K_LOCATION:
      e->location = steal_pointer (&v->s);
      break;
    case K_INSECURE:
      e->insecure = v->b;
      break;
    case K_BLOCKED:
      e->blocked = v->b;
      break;
    case K_BY_DIGEST:
      e->mirror_by_digest_only = v->b;
      break;
    case K_M_LOCATION:
      m->location = steal_pointer (&v->s);
      break;
    case K_M_INSECURE:
      m->insecure = v->b;
      break;
    case K_PULL_FROM_MIRROR:
      if (!one_of (v->s, pulls))
        return conf_error (st, line, err, "pull-from-mirror must be all, digest-only or tag-only");
      m->digest_only = strcmp (v->s, "digest-only") == 0;
      m->tag_only = strcmp (v->s, "tag-only") == 0;
      break;
    case K_V1_REGISTRIES:
      st->v1_used = st->v1_used || v->n > 0;
      st->v1[st->sec - SEC_V1_SEARCH] = *v;
      memset (v, 0, sizeof *v);
      break;
    }
  return 0;
}

/* The v1 format as v2: search list, one entry per insecure or blocked host. */
static int
convert_v1 (struct parse_state *st, ohbox_error_t *err)
{
  struct ohbox_registries_conf *c = st->c;
  if (c->n_entries || c->unqualified_search[0])
    return conf_error (st, 0, err, "mixing the v1 ([registries.*]) and v2 formats is not supported");
  if (st->v1[0].n)
    {
      free (c->unqualified_search);
      c->unqualified_search = steal_pointer (&st->v1[0].items);
      st->v1[0].n = 0;
      st->search_set = true;
    }
  for (int k = 1; k <= 2; k++)
    for (size_t i = 0; i < st->v1[k].n; i++)
      {
        char *host = st->v1[k].items[i];
        trim_slashes (host);
        const char *why = location_error (host);
        if (why)
          return conf_error (st, 0, err, "registries.%s: `%s`: %s", k == 1 ? "insecure" : "block", host, why);
        size_t j;
        for (j = 0; j < c->n_entries && strcmp (c->entries[j].prefix, host) != 0; j++)
          ;
        if (j == c->n_entries)
          {
            if (c->n_entries == ENTRIES_MAX)
              return conf_error (st, 0, err, "more than %d registries", ENTRIES_MAX);
            c->entries = xrealloc (c->entries, (c->n_entries + 1) * sizeof *c->entries);
            memset (&c->entries[j], 0, sizeof *c->entries);
            c->entries[j].prefix = xstrdup (host);
            c->entries[j].location = xstrdup (host);
            c->n_entries++;
          }
        if (k == 1)
          c->entries[j].insecure = true;
        else
          c->entries[j].blocked = true;
      }
  return 0;
}

static int
parse_one (const char *text, const char *filename, struct ohbox_registries_conf **out, bool *search_set, bool *v1_used,
           ohbox_error_t *err)
{
  static const struct toml_handler handler = { on_table, on_keyval };
  struct parse_state st = { .file = filename ? filename : "registries.conf", .c = conf_new () };
  int ret = -1;
  if (ohbox_toml_parse (text, st.file, &handler, &st, err) < 0 || finish_registry (&st, err) < 0
      || (st.v1_used && convert_v1 (&st, err) < 0))
    goto out;
  *out = steal_pointer (&st.c);
  if (search_set)
    *search_set = st.search_set;
  if (v1_used)
    *v1_used = st.v1_used;
  ret = 0;
out:
  for (int k = 0; k < 3; k++)
    ohbox_toml_value_clear (&st.v1[k]);
  ohbox_registries_conf_free (st.c);
  return ret;
}

int
ohbox_registries_conf_parse (const char *text, const char *filename, struct ohbox_registries_conf **out,
                             ohbox_error_t *err)
{
  *out = NULL;
  return parse_one (text ? text : "", filename, out, NULL, NULL, err);
}

/* ------------------------------------------------------------- loading */

/* Reads and parses PATH; *OUT stays NULL when it does not exist and
 * MISSING_OK. */
static int
read_conf (const char *path, bool missing_ok, struct ohbox_registries_conf **out, bool *search_set, bool *v1_used,
           ohbox_error_t *err)
{
  cleanup_free char *text = NULL;
  size_t len = 0;
  *out = NULL;
  if (ohbox_read_file_at (AT_FDCWD, path, CONF_FILE_MAX, &text, &len, err) < 0)
    {
      if (missing_ok && (*err)->errno_value == ENOENT)
        {
          ohbox_error_release (err);
          return 0;
        }
      return ohbox_error_prefix (err, "registries configuration");
    }
  if (strlen (text) != len)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "%s: contains a NUL byte", path);
  return parse_one (text, path, out, search_set, v1_used, err);
}

/* Later files override: the search list when set, entries of the same
 * prefix, aliases of the same name (an empty value removes one). */
static void
merge (struct ohbox_registries_conf *dst, struct ohbox_registries_conf *src, bool search_set)
{
  if (search_set)
    {
      for (char **s = dst->unqualified_search; *s; s++)
        free (*s);
      free (dst->unqualified_search);
      dst->unqualified_search = steal_pointer (&src->unqualified_search);
    }
  for (size_t i = 0; i < src->n_entries; i++)
    {
      size_t j;
      for (j = 0; j < dst->n_entries && strcmp (dst->entries[j].prefix, src->entries[i].prefix) != 0; j++)
        ;
      if (j == dst->n_entries)
        dst->entries = xrealloc (dst->entries, (++dst->n_entries) * sizeof *dst->entries);
      else
        entry_clear (&dst->entries[j]);
      dst->entries[j] = src->entries[i];
    }
  src->n_entries = 0;
  for (size_t i = 0; i < src->n_aliases; i++)
    {
      struct ohbox_registry_alias *a = &src->aliases[i];
      size_t j;
      for (j = 0; j < dst->n_aliases && strcmp (dst->aliases[j].name, a->name) != 0; j++)
        ;
      if (j < dst->n_aliases)
        {
          free (dst->aliases[j].name);
          free (dst->aliases[j].value);
          dst->aliases[j] = dst->aliases[--dst->n_aliases];
        }
      if (*a->value == '\0')
        {
          free (a->name);
          free (a->value);
          continue;
        }
      dst->aliases = xrealloc (dst->aliases, (dst->n_aliases + 1) * sizeof *dst->aliases);
      dst->aliases[dst->n_aliases++] = *a;
    }
  src->n_aliases = 0;
}

static int
cmp_names (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* The *.conf files of DIR, in name order, merged into C. */
static int
load_dropins (const char *dir, struct ohbox_registries_conf *c, ohbox_error_t *err)
{
  cleanup_dir DIR *d = opendir (dir);
  if (d == NULL)
    return errno == ENOENT || errno == ENOTDIR ? 0 : ohbox_error_sys (err, OHBOX_ERR_USAGE, "open `%s`", dir);
  char *names[DROPINS_MAX];
  size_t n = 0;
  int ret = -1;
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      size_t len = strlen (de->d_name);
      struct stat sb;
      if (len <= 5 || strcmp (de->d_name + len - 5, ".conf") != 0 || fstatat (dirfd (d), de->d_name, &sb, 0) < 0
          || !S_ISREG (sb.st_mode))
        continue;
      if (n == DROPINS_MAX)
        {
          ohbox_error (err, OHBOX_ERR_USAGE, 0, "`%s` has more than %d .conf files", dir, DROPINS_MAX);
          goto out;
        }
      names[n++] = xstrdup (de->d_name);
    }
  qsort (names, n, sizeof names[0], cmp_names);
  for (size_t i = 0; i < n; i++)
    {
      cleanup_free char *path = xasprintf ("%s/%s", dir, names[i]);
      struct ohbox_registries_conf *one = NULL;
      bool search_set = false, v1 = false;
      if (read_conf (path, true, &one, &search_set, &v1, err) < 0)
        goto out;
      if (one == NULL)
        continue; /* removed meanwhile */
      if (v1)
        {
          ohbox_registries_conf_free (one);
          ohbox_error (err, OHBOX_ERR_USAGE, 0, "%s: drop-in files must use the v2 format", path);
          goto out;
        }
      merge (c, one, search_set);
      ohbox_registries_conf_free (one);
    }
  ret = 0;
out:
  for (size_t i = 0; i < n; i++)
    free (names[i]);
  return ret;
}

int
ohbox_registries_conf_load_dirs (const char *system_dir, const char *user_dir, struct ohbox_registries_conf **out,
                                 ohbox_error_t *err)
{
  *out = NULL;
  cleanup_free char *user_file = user_dir ? xasprintf ("%s/registries.conf", user_dir) : NULL;
  cleanup_free char *system_file = xasprintf ("%s/registries.conf", system_dir);
  cleanup_free char *user_d = user_dir ? xasprintf ("%s/registries.conf.d", user_dir) : NULL;
  cleanup_free char *system_d = xasprintf ("%s/registries.conf.d", system_dir);
  struct ohbox_registries_conf *c = NULL;
  /* The user's file replaces the system's, with its drop-ins only. */
  bool from_user = false;
  if (user_file && read_conf (user_file, true, &c, NULL, NULL, err) < 0)
    return -1;
  from_user = c != NULL;
  if (c == NULL && read_conf (system_file, true, &c, NULL, NULL, err) < 0)
    return -1;
  if (c == NULL)
    c = conf_new ();
  if ((!from_user && load_dropins (system_d, c, err) < 0) || (user_d && load_dropins (user_d, c, err) < 0))
    {
      ohbox_registries_conf_free (c);
      return -1;
    }
  *out = c;
  return 0;
}

int
ohbox_registries_conf_load (const char *path, struct ohbox_registries_conf **out, ohbox_error_t *err)
{
  *out = NULL;
  const char *env = getenv ("CONTAINERS_REGISTRIES_CONF");
  if (path == NULL && env && *env)
    path = env;
  if (path)
    return read_conf (path, false, out, NULL, NULL, err);
  const char *xdg = getenv ("XDG_CONFIG_HOME");
  const char *home = getenv ("HOME");
  cleanup_free char *user_dir = NULL;
  if (xdg && *xdg == '/')
    user_dir = xasprintf ("%s/containers", xdg);
  else if (home && *home == '/')
    user_dir = xasprintf ("%s/.config/containers", home);
  return ohbox_registries_conf_load_dirs ("/etc/containers", user_dir, out, err);
}

/* ------------------------------------------------------------- matching */

/* How much of NAME the prefix of E covers, or 0 when it does not match. */
static size_t
match_length (const struct ohbox_registry_entry *e, const char *name)
{
  size_t host_len = strcspn (name, "/");
  if (is_wildcard (e->prefix))
    {
      /* "*.example.com" matches a host ending in ".example.com" (any
       * depth, any port), and covers the whole host. */
      const char *suffix = e->prefix + 1;
      size_t hostname_len = strcspn (name, ":/");
      size_t n = strlen (suffix);
      if (hostname_len > n && strncmp (name + hostname_len - n, suffix, n) == 0)
        return host_len;
      return 0;
    }
  size_t n = strlen (e->prefix);
  if (strncmp (name, e->prefix, n) == 0 && (name[n] == '\0' || name[n] == '/'))
    return n;
  return 0;
}

const struct ohbox_registry_entry *
ohbox_registries_conf_find (const struct ohbox_registries_conf *c, const char *name)
{
  const struct ohbox_registry_entry *best = NULL;
  size_t best_len = 0;
  for (size_t i = 0; c && i < c->n_entries; i++)
    {
      const struct ohbox_registry_entry *e = &c->entries[i];
      /* Longest prefix as written wins, as containers/image does. */
      if (match_length (e, name) > 0 && strlen (e->prefix) > best_len)
        {
          best = e;
          best_len = strlen (e->prefix);
        }
    }
  return best;
}

static void
add_endpoint (struct ohbox_registry_endpoint **v, size_t *n, char *location, bool insecure)
{
  *v = xrealloc (*v, (*n + 1) * sizeof **v);
  memset (&(*v)[*n], 0, sizeof **v);
  (*v)[*n].location = location;
  (*v)[*n].insecure = insecure;
  (*n)++;
}

int
ohbox_registries_conf_pull_sources_ex (const struct ohbox_registries_conf *c, const char *name, bool by_digest,
                                       struct ohbox_registry_endpoint **out, size_t *n_out, ohbox_error_t *err)
{
  *out = NULL;
  *n_out = 0;
  const struct ohbox_registry_entry *e = ohbox_registries_conf_find (c, name);
  struct ohbox_registry_endpoint *v = NULL;
  size_t n = 0;
  if (e == NULL)
    {
      add_endpoint (&v, &n, xstrdup (name), false);
      *out = v;
      *n_out = n;
      return 0;
    }
  if (e->blocked)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "pulling `%s` is blocked by registries.conf (prefix `%s`); edit the configuration to "
                        "allow it",
                        name, e->prefix);
  const char *rest = name + match_length (e, name);
  for (size_t i = 0; i < e->n_mirrors; i++)
    {
      const struct ohbox_registry_endpoint *m = &e->mirrors[i];
      bool use = by_digest ? !m->tag_only : !(e->mirror_by_digest_only || m->digest_only);
      if (use)
        add_endpoint (&v, &n, xasprintf ("%s%s", m->location, rest), m->insecure);
    }
  /* A wildcard entry without location keeps the name as it is. */
  if (e->location && *e->location)
    add_endpoint (&v, &n, xasprintf ("%s%s", e->location, rest), e->insecure);
  else
    add_endpoint (&v, &n, xstrdup (name), e->insecure);
  *out = v;
  *n_out = n;
  return 0;
}

int
ohbox_registries_conf_pull_sources (const struct ohbox_registries_conf *c, const char *name,
                                    struct ohbox_registry_endpoint **out, size_t *n_out, ohbox_error_t *err)
{
  return ohbox_registries_conf_pull_sources_ex (c, name, false, out, n_out, err);
}

void
ohbox_registry_endpoints_free (struct ohbox_registry_endpoint *e, size_t n)
{
  for (size_t i = 0; e && i < n; i++)
    endpoint_clear (&e[i]);
  free (e);
}

const char *
ohbox_registries_conf_alias (const struct ohbox_registries_conf *c, const char *short_name)
{
  for (size_t i = 0; c && i < c->n_aliases; i++)
    if (strcmp (c->aliases[i].name, short_name) == 0)
      return c->aliases[i].value;
  return NULL;
}
