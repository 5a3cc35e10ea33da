/* network_named.c: named networks (`ohbox network`, `--network NAME`; see
 * network.h): definitions, their bridges, and who uses them. */
#include "config.h"
#include "network/netlink.h"
#include "network/network_internal.h"
#include "common/utils.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* Names `--network` gives another meaning to. */
static const char *const reserved[] = { "bridge", "none", "host", "default", "pasta", "slirp4netns", NULL };

#define NAMED_POOL "10.214.0.0/16" /* where /24s are chosen from */
#define NAMED_PREFIX 24

const char *
ohbox_network_defs_dir (void)
{
  static char *dir;
  const char *netroot = getenv ("OHBOX_NETROOT");
  if (netroot && *netroot)
    {
      /* (once: the environment does not change under a running ohbox) */
      if (dir == NULL)
        dir = xasprintf ("%s/networks", netroot);
      return dir;
    }
  return "/var/lib/ohbox/networks";
}

static bool
is_reserved (const char *name)
{
  for (size_t i = 0; reserved[i]; i++)
    if (strcmp (reserved[i], name) == 0)
      return true;
  return false;
}

int
ohbox_network_name_check (const char *name, ohbox_error_t *err)
{
  size_t len = strlen (name);
  bool ok = len > 0 && len <= OHBOX_NETWORK_NAME_MAX && isalnum ((unsigned char) name[0]);
  for (size_t i = 0; ok && i < len; i++)
    ok = isalnum ((unsigned char) name[i]) || name[i] == '_' || name[i] == '.' || name[i] == '-';
  if (!ok)
    return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                        "invalid network name `%.80s`: 1 to %d letters, digits, `_`, `.` or `-`, starting with a "
                        "letter or digit",
                        name, OHBOX_NETWORK_NAME_MAX);
  if (is_reserved (name))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "`%s` is a --network mode, not the name of a network", name);
  return 0;
}

/* The definitions' directory, made when CREATE; without, a missing one is
 * *RET_FD -1 and no error (no network was ever made). */
static int
open_defs_dir (bool create, int *ret_fd, ohbox_error_t *err)
{
  const char *dir = ohbox_network_defs_dir ();
  if (create && ohbox_mkdir_p (AT_FDCWD, dir, 0700, err) < 0)
    return ohbox_error_prefix (err, "named networks");
  *ret_fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (*ret_fd < 0 && !(errno == ENOENT && !create))
    return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "open `%s`", dir);
  return 0;
}

/* A definition's JSON ({"name","id","subnet","gateway","bridge","created"})
 * into D. */
static int
def_from_json (json_t *j, struct ohbox_netdef *d, const char *file, ohbox_error_t *err)
{
  memset (d, 0, sizeof *d);
  const char *name = json_string_value (json_object_get (j, "name"));
  const char *subnet = json_string_value (json_object_get (j, "subnet"));
  const char *gw = json_string_value (json_object_get (j, "gateway"));
  const char *bridge = json_string_value (json_object_get (j, "bridge"));
  struct ohbox_cidr4 c;
  if (name == NULL || strlen (name) > OHBOX_NETWORK_NAME_MAX || subnet == NULL || gw == NULL || bridge == NULL
      || strlen (bridge) >= sizeof d->bridge || ohbox_cidr4_parse (subnet, false, &c) < 0
      || inet_pton (AF_INET, gw, &d->gw) != 1)
    return ohbox_error (err, OHBOX_ERR_STORE, 0, "network definition `%s` is corrupt", file);
  strcpy (d->name, name);
  strcpy (d->bridge, bridge);
  d->net = c.net;
  d->prefix = c.prefix;
  d->isolated = false;
  return 0;
}

static int
load_json (int dfd, const char *name, json_t **ret, ohbox_error_t *err)
{
  char file[OHBOX_NETWORK_NAME_MAX + 8];
  snprintf (file, sizeof file, "%s.json", name);
  cleanup_free char *text = NULL;
  size_t len;
  if (dfd < 0 || ohbox_read_file_at (dfd, file, 64 * 1024, &text, &len, NULL) < 0)
    return ohbox_error (err, OHBOX_ERR_NOT_FOUND, 0, "no network `%s`: make it with `ohbox network create %s`", name,
                        name);
  json_error_t je;
  *ret = json_loadb (text, len, 0, &je);
  if (*ret == NULL)
    return ohbox_error (err, OHBOX_ERR_STORE, 0, "network definition `%s/%s` is corrupt", ohbox_network_defs_dir (),
                        file);
  return 0;
}

int
ohbox_netdef_load (const char *name, struct ohbox_netdef *d, ohbox_error_t *err)
{
  if (ohbox_network_name_check (name, err) < 0)
    return -1;
  cleanup_close int dfd = -1;
  json_t *j = NULL;
  if (open_defs_dir (false, &dfd, err) < 0 || load_json (dfd, name, &j, err) < 0)
    return -1;
  int r = def_from_json (j, d, name, err);
  json_decref (j);
  return r;
}

int
ohbox_netdefs_all (struct ohbox_netdef **ret, size_t *ret_n, ohbox_error_t *err)
{
  size_t n = 1, cap = 8;
  struct ohbox_netdef *defs = xcalloc (cap, sizeof *defs);
  if (ohbox_netdef_default (&defs[0], err) < 0)
    {
      free (defs);
      return -1;
    }
  cleanup_close int dfd = -1;
  if (open_defs_dir (false, &dfd, err) < 0)
    {
      free (defs);
      return -1;
    }
  cleanup_dir DIR *d = dfd >= 0 ? fdopendir (dfd) : NULL;
  if (d)
    dfd = -1;
  struct dirent *de;
  while (d && (de = readdir (d)) != NULL)
    {
      size_t len = strlen (de->d_name);
      if (de->d_name[0] == '.' || len < 6 || strcmp (de->d_name + len - 5, ".json") != 0)
        continue;
      char name[OHBOX_NETWORK_NAME_MAX + 8];
      snprintf (name, sizeof name, "%.*s", (int) (len - 5), de->d_name);
      json_t *j = NULL;
      ohbox_error_t e = NULL;
      if (n == cap)
        defs = xrealloc (defs, (cap *= 2) * sizeof *defs);
      /* A corrupt one is `ohbox check`'s to report: the others still count. */
      if (load_json (dirfd (d), name, &j, &e) == 0 && def_from_json (j, &defs[n], de->d_name, &e) == 0)
        n++;
      json_decref (j);
      ohbox_error_release (&e);
    }
  *ret = defs;
  *ret_n = n;
  return 0;
}

/* The sandboxes with an address of D (held leases, not stale ones), as
 * [{"id": their state directory's name, "ip"}]. */
static json_t *
members (int netfd, const struct ohbox_netdef *d)
{
  json_t *ids = json_array ();
  cleanup_close int fd = openat (netfd, "ip", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  cleanup_dir DIR *dir = fd >= 0 ? fdopendir (fd) : NULL;
  if (dir == NULL)
    return ids;
  fd = -1;
  struct ohbox_cidr4 sub = { .net = d->net, .prefix = d->prefix };
  struct dirent *de;
  while ((de = readdir (dir)) != NULL)
    {
      struct in_addr a;
      char owner[PATH_MAX];
      if (inet_pton (AF_INET, de->d_name, &a) != 1 || !ohbox_cidr4_contains (&sub, a)
          || !ohbox_ip_leased (netfd, a, owner, sizeof owner))
        continue;
      if (access (owner, F_OK) < 0)
        continue;
      const char *slash = strrchr (owner, '/');
      json_array_append_new (ids, json_pack ("{s:s, s:s}", "id", slash ? slash + 1 : owner, "ip", de->d_name));
    }
  return ids;
}

static json_t *
def_json (const struct ohbox_netdef *d, json_t *extra)
{
  char net[INET_ADDRSTRLEN], gw[INET_ADDRSTRLEN];
  inet_ntop (AF_INET, &d->net, net, sizeof net);
  inet_ntop (AF_INET, &d->gw, gw, sizeof gw);
  cleanup_free char *subnet = xasprintf ("%s/%d", net, d->prefix);
  json_t *j = json_pack ("{s:s, s:s, s:s, s:s, s:b}", "name", d->name[0] ? d->name : "bridge", "subnet", subnet,
                         "gateway", gw, "bridge", d->bridge, "default", d->name[0] == '\0');
  if (extra)
    json_object_update_missing (j, extra);
  return j;
}

/* A subnet that overlaps none of DEFS and no route of the host: SUBNET, or
 * the first free /24 of NAMED_POOL. */
static int
choose_subnet (const char *subnet, const struct ohbox_netdef *defs, size_t n, struct ohbox_cidr4 *ret,
               ohbox_error_t *err)
{
  struct ohbox_nl *nl = NULL;
  struct ohbox_nl_route4 *routes = NULL;
  size_t n_routes = 0;
  if (ohbox_nl_open (-1, &nl, err) < 0 || ohbox_nl_routes4 (nl, &routes, &n_routes, err) < 0)
    {
      ohbox_nl_close (nl);
      return -1;
    }
  ohbox_nl_close (nl);
  struct ohbox_cidr4 pool;
  ohbox_cidr4_parse (NAMED_POOL, false, &pool);
  uint32_t count = subnet ? 1 : 1u << (NAMED_PREFIX - pool.prefix);
  int r = -1;
  for (uint32_t i = 0; i < count && r < 0; i++)
    {
      struct ohbox_cidr4 c = { .net = { htonl (ntohl (pool.net.s_addr) + (i << (32 - NAMED_PREFIX))) },
                               .prefix = NAMED_PREFIX };
      if (subnet && (ohbox_cidr4_parse (subnet, false, &c) < 0 || c.prefix < 16 || c.prefix > 28))
        {
          free (routes);
          return ohbox_error (err, OHBOX_ERR_USAGE, 0,
                              "invalid --subnet `%s`: use A.B.C.D/N with N from 16 to 28 and the host bits zero",
                              subnet);
        }
      const char *clash = NULL;
      for (size_t k = 0; k < n && !clash; k++)
        {
          struct ohbox_cidr4 o = { .net = defs[k].net, .prefix = defs[k].prefix };
          if (ohbox_cidr4_overlap (&c, &o))
            clash = defs[k].name[0] ? defs[k].name : "bridge (ohbox0)";
        }
      char dev[IF_NAMESIZE + 16] = "";
      for (size_t k = 0; k < n_routes && !clash; k++)
        {
          struct ohbox_cidr4 o = { .net = routes[k].dst, .prefix = routes[k].prefix };
          if (ohbox_cidr4_overlap (&c, &o))
            clash = if_indextoname ((unsigned) routes[k].oif, dev) ? dev : "a route of the host";
        }
      if (clash == NULL)
        {
          *ret = c;
          r = 0;
        }
      else if (subnet)
        r = ohbox_error (err, OHBOX_ERR_USAGE, 0, "--subnet %s overlaps `%s`'s addresses: choose another", subnet,
                         clash);
    }
  free (routes);
  if (r < 0 && !subnet)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "no free /%d left in %s: remove networks, or give --subnet",
                        NAMED_PREFIX, NAMED_POOL);
  return r;
}

/* A bridge name no link has: "ohbn" + 11 hex digits (15 characters; never
 * a sandbox veth's prefix "ohb" + hex). */
static int
new_bridge_name (char name[IFNAMSIZ], char id[65], ohbox_error_t *err)
{
  for (int tries = 0; tries < 16; tries++)
    {
      uint8_t raw[32];
      if (getrandom (raw, sizeof raw, 0) != (ssize_t) sizeof raw)
        return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "getrandom");
      for (size_t i = 0; i < sizeof raw; i++)
        snprintf (id + 2 * i, 3, "%02x", raw[i]);
      snprintf (name, IFNAMSIZ, "ohbn%.11s", id);
      if (if_nametoindex (name) == 0)
        return 0;
    }
  return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "no free bridge name");
}

int
ohbox_network_create (const char *name, const char *subnet, json_t **ret, ohbox_error_t *err)
{
  if (geteuid () != 0)
    return ohbox_error (err, OHBOX_ERR_UNSUPPORTED, 0,
                        "named networks need root (rootless sandboxes use pasta or "
                        "slirp4netns, one network each)");
  if (ohbox_network_name_check (name, err) < 0)
    return -1;
  cleanup_close int lock = -1, dfd = -1;
  cleanup_close int netfd = ohbox_netroot_open_locked (&lock, err);
  if (netfd < 0 || open_defs_dir (true, &dfd, err) < 0)
    return -1;
  char file[OHBOX_NETWORK_NAME_MAX + 8];
  snprintf (file, sizeof file, "%s.json", name);
  struct stat st;
  if (fstatat (dfd, file, &st, AT_SYMLINK_NOFOLLOW) == 0)
    return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "network `%s` exists", name);
  struct ohbox_netdef *defs = NULL, d = { .isolated = false };
  size_t n = 0;
  struct ohbox_cidr4 c = { 0 };
  char id[65];
  if (ohbox_netdefs_all (&defs, &n, err) < 0)
    return -1;
  int r = choose_subnet (subnet, defs, n, &c, err);
  free (defs);
  if (r < 0 || new_bridge_name (d.bridge, id, err) < 0)
    return -1;
  snprintf (d.name, sizeof d.name, "%s", name);
  d.net = c.net;
  d.prefix = c.prefix;
  d.gw.s_addr = htonl (ntohl (c.net.s_addr) + 1);
  cleanup_free char *now = ohbox_now_rfc3339 ();
  json_t *j = def_json (&d, NULL);
  json_object_del (j, "default");
  json_object_set_new (j, "id", json_string (id));
  json_object_set_new (j, "created", json_string (now));
  cleanup_free char *text = json_dumps (j, JSON_INDENT (2) | JSON_SORT_KEYS);
  /* The definition first: killed before its bridge exists, `ohbox check`
   * finds a network without one (and a start makes it). */
  r = ohbox_write_file_atomic (dfd, file, text, strlen (text), 0600, err);
  if (r == 0 && ohbox_bridge_ensure (&d, err) < 0)
    {
      ohbox_bridge_remove (&d, NULL);
      unlinkat (dfd, file, 0);
      r = -1;
    }
  if (r == 0 && ret)
    *ret = json_incref (j);
  json_decref (j);
  return r < 0 ? ohbox_error_prefix (err, "create network `%s`", name) : 0;
}

int
ohbox_network_remove (const char *name, ohbox_error_t *err)
{
  if (is_reserved (name))
    return ohbox_error (err, OHBOX_ERR_USAGE, 0, "`%s` is not a named network: it cannot be removed", name);
  if (ohbox_network_name_check (name, err) < 0)
    return -1;
  cleanup_close int lock = -1;
  cleanup_close int netfd = ohbox_netroot_open_locked (&lock, err);
  if (netfd < 0)
    return -1;
  struct ohbox_netdef d;
  if (ohbox_netdef_load (name, &d, err) < 0)
    return -1;
  json_t *users = members (netfd, &d);
  if (json_array_size (users) > 0)
    {
      struct ohbox_buf b = { 0 };
      size_t i;
      json_t *u;
      json_array_foreach (users, i, u)
      {
        cleanup_free char *one = xasprintf ("%s%.12s", i ? ", " : "", json_string_value (json_object_get (u, "id")));
        ohbox_buf_append (&b, one, strlen (one));
      }
      ohbox_error (err, OHBOX_ERR_GENERIC, 0, "network `%s` is in use by sandbox%s %s: remove %s first", name,
                   json_array_size (users) > 1 ? "es" : "", b.data, json_array_size (users) > 1 ? "them" : "it");
      ohbox_buf_free (&b);
      json_decref (users);
      return -1;
    }
  json_decref (users);
  cleanup_close int dfd = -1;
  if (open_defs_dir (false, &dfd, err) < 0)
    return -1;
  char file[OHBOX_NETWORK_NAME_MAX + 8];
  snprintf (file, sizeof file, "%s.json", name);
  /* The bridge and its elements first: killed in between, the definition
   * is still there to remove again. */
  if (ohbox_bridge_remove (&d, err) < 0)
    return ohbox_error_prefix (err, "remove network `%s`", name);
  if (dfd < 0 || unlinkat (dfd, file, 0) < 0)
    return ohbox_error_sys (err, OHBOX_ERR_NETWORK, "remove `%s/%s`", ohbox_network_defs_dir (), file);
  return 0;
}

/* D as ls and inspect show it: its definition, bridge state, sandboxes. */
static json_t *
describe (int netfd, int dfd, const struct ohbox_netdef *d)
{
  json_t *extra = NULL;
  if (d->name[0] && dfd >= 0)
    load_json (dfd, d->name, &extra, NULL);
  json_t *j = def_json (d, extra);
  json_decref (extra);
  json_object_set_new (j, "bridge_present", json_boolean (ohbox_bridge_exists (d)));
  json_object_set_new (j, "sandboxes", netfd >= 0 ? members (netfd, d) : json_array ());
  return j;
}

int
ohbox_network_list (json_t **ret, ohbox_error_t *err)
{
  struct ohbox_netdef *defs = NULL;
  size_t n = 0;
  cleanup_close int lock = -1;
  cleanup_close int netfd = geteuid () == 0 ? ohbox_netroot_open_locked (&lock, err) : -1;
  if ((geteuid () == 0 && netfd < 0) || ohbox_netdefs_all (&defs, &n, err) < 0)
    return -1;
  cleanup_close int dfd = -1;
  open_defs_dir (false, &dfd, NULL);
  json_t *a = json_array ();
  for (size_t i = 0; i < n; i++)
    json_array_append_new (a, describe (netfd, dfd, &defs[i]));
  free (defs);
  *ret = a;
  return 0;
}

int
ohbox_network_inspect (const char *name, json_t **ret, ohbox_error_t *err)
{
  struct ohbox_netdef d;
  cleanup_close int lock = -1;
  cleanup_close int netfd = geteuid () == 0 ? ohbox_netroot_open_locked (&lock, err) : -1;
  /* "bridge": the default network, as `ls` names it. */
  int r = strcmp (name, "bridge") == 0 ? ohbox_netdef_default (&d, err) : ohbox_netdef_load (name, &d, err);
  if ((geteuid () == 0 && netfd < 0) || r < 0)
    return -1;
  cleanup_close int dfd = -1;
  open_defs_dir (false, &dfd, NULL);
  *ret = describe (netfd, dfd, &d);
  return 0;
}
