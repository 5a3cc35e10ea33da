/* ipython.c: `run_ipython` without Jupyter.  The image's python3 runs a
 * small driver (below) that keeps one globals dict between cells, runs a
 * cell like IPython does (statements, then the value of a final expression
 * shown with repr), and captures everything written to fd 1 and 2 --
 * print(), warnings, and the output of subprocesses -- plus tracebacks.
 * The executor talks to it over two private pipes (fds 3 and 4), so cells
 * may read stdin or print anything without breaking the protocol.  On the
 * action timeout the cell gets SIGINT (KeyboardInterrupt), as Jupyter's
 * interrupt does; a driver that does not answer then is killed and the
 * next cell starts a fresh interpreter. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "executor.h"
#include "obs.h"
#include "users.h"
#include "common/utils.h"

/* Reply size the executor accepts from the driver (the driver already cuts
 * cell output to 1 MiB). */
#define MAX_REPLY (8u << 20)
#define DEFAULT_CELL_TIMEOUT 120.0

static const char driver[]
    = "import ast, io, json, os, sys, tempfile, traceback\n"
      "rf = os.fdopen(3, 'rb', 0); wf = os.fdopen(4, 'wb', 0)\n"
      "g = {'__name__': '__main__', '__builtins__': __builtins__}\n"
      "LIMIT = 1 << 20\n"
      "def read_msg():\n"
      "    hdr = rf.readline()\n"
      "    if not hdr: sys.exit(0)\n"
      "    n = int(hdr); data = b''\n"
      "    while len(data) < n:\n"
      "        c = rf.read(n - len(data))\n"
      "        if not c: sys.exit(0)\n"
      "        data += c\n"
      "    return json.loads(data)\n"
      "devnull = os.open(os.devnull, os.O_RDWR)\n"
      "while True:\n"
      "    req = read_msg()\n"
      "    out = tempfile.TemporaryFile()\n"
      "    os.dup2(out.fileno(), 1); os.dup2(out.fileno(), 2)\n"
      "    sys.stdout = sys.stderr = io.TextIOWrapper(os.fdopen(1, 'wb', 0, closefd=False), write_through=True,"
      " errors='backslashreplace')\n"
      "    result = None\n"
      "    try:\n"
      "        if req.get('cwd'): os.chdir(req['cwd'])\n"
      "        tree = ast.parse(req['code'], '<cell>', 'exec')\n"
      "        last = None\n"
      "        if tree.body and isinstance(tree.body[-1], ast.Expr):\n"
      "            last = ast.Expression(tree.body.pop().value)\n"
      "        exec(compile(tree, '<cell>', 'exec'), g)\n"
      "        if last is not None:\n"
      "            v = eval(compile(last, '<cell>', 'eval'), g)\n"
      "            if v is not None:\n"
      "                g['_'] = v; result = repr(v)\n"
      "    except BaseException as e:\n"
      "        tb = e.__traceback__\n"
      "        if tb is not None and tb.tb_frame.f_code.co_filename == '<string>': tb = tb.tb_next\n"
      "        if isinstance(e, SyntaxError): lines = traceback.format_exception_only(type(e), e)\n"
      "        else: lines = traceback.format_exception(type(e), e, tb)\n"
      "        sys.stdout.write(''.join(lines))\n"
      "    try: sys.stdout.flush()\n"
      "    except Exception: pass\n"
      "    os.dup2(devnull, 1); os.dup2(devnull, 2)\n"
      "    size = out.seek(0, 2); out.seek(0)\n"
      "    text = out.read(LIMIT).decode('utf-8', 'replace')\n"
      "    if size > LIMIT: text += '\\n[... output truncated: %d bytes ...]\\n' % (size - LIMIT)\n"
      "    out.close()\n"
      "    if result is not None: text = (text + result) if not text or text.endswith('\\n') else (text + '\\n' + "
      "result)\n"
      "    data = json.dumps({'output': text, 'python': sys.executable}).encode()\n"
      "    wf.write(b'%d\\n' % len(data) + data)\n";

struct ipython
{
  pid_t pid;
  int to_fd, from_fd;
  char *python;
  char *synced_cwd;
};

static double
now_mono (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void
ipython_stop (struct ipython *py)
{
  if (py->pid > 0)
    {
      kill (py->pid, SIGKILL);
      waitpid (py->pid, NULL, 0);
    }
  if (py->to_fd >= 0)
    close (py->to_fd);
  if (py->from_fd >= 0)
    close (py->from_fd);
  py->pid = -1;
  py->to_fd = py->from_fd = -1;
  free (py->synced_cwd);
  py->synced_cwd = NULL;
}

/* python3 as the shell would find it: a switched user gets the login PATH
 * (`su -`), a plain process the executor's own. */
void
ipython_free (struct ipython *py)
{
  if (py == NULL)
    return;
  ipython_stop (py);
  free (py->python);
  free (py);
}

static char *
find_python (struct executor *ex)
{
  const char *path = getenv ("PATH");
  if (ex->switch_user)
    path = ex->uid == 0 ? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
                        : "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games";
  cleanup_free char *dirs = xasprintf ("%s:/usr/local/bin:/usr/bin:/bin", path ? path : "");
  char *save = NULL;
  for (char *d = strtok_r (dirs, ":", &save); d; d = strtok_r (NULL, ":", &save))
    {
      char *cand = xasprintf ("%s/python3", d);
      if (access (cand, X_OK) == 0)
        return cand;
      free (cand);
    }
  return NULL;
}

static int
ipython_start (struct executor *ex, struct ipython *py, char **why)
{
  cleanup_free char *python = find_python (ex);
  if (python == NULL)
    {
      *why = xstrdup ("run_ipython needs python3 in the sandbox, and none was found in PATH");
      return -1;
    }
  int req[2], rep[2];
  if (pipe2 (req, O_CLOEXEC) < 0)
    {
      *why = xasprintf ("pipe: %s", strerror (errno));
      return -1;
    }
  if (pipe2 (rep, O_CLOEXEC) < 0)
    {
      close (req[0]);
      close (req[1]);
      *why = xasprintf ("pipe: %s", strerror (errno));
      return -1;
    }
  cleanup_free char *dir = ex->bash ? bash_session_cwd (ex->bash) : xstrdup (ex->work_dir);
  char *argv[] = { "python3", "-u", "-c", (char *) driver, NULL };
  gid_t groups[256];
  int ngroups = ex->switch_user ? users_groups (ex->username, ex->gid, groups, sizeof (groups) / sizeof (groups[0]))
                                : 0;
  pid_t pid = fork ();
  if (pid < 0)
    {
      *why = xasprintf ("fork: %s", strerror (errno));
      close (req[0]);
      close (req[1]);
      close (rep[0]);
      close (rep[1]);
      return -1;
    }
  if (pid == 0)
    {
      sigset_t all;
      sigemptyset (&all);
      sigprocmask (SIG_SETMASK, &all, NULL);
      for (int sig = 1; sig < NSIG; sig++)
        signal (sig, SIG_DFL);
      setsid ();
      int null = open ("/dev/null", O_RDWR);
      /* fds 3 and 4 carry the protocol; move them out of the way first. */
      int r = fcntl (req[0], F_DUPFD, 10), w = fcntl (rep[1], F_DUPFD, 10);
      dup2 (null, 0);
      dup2 (null, 1);
      dup2 (null, 2);
      dup2 (r, 3);
      dup2 (w, 4);
      syscall (SYS_close_range, 5U, ~0U, 0U);
      if (ex->switch_user
          && (setgroups ((size_t) ngroups, groups) < 0 || setgid (ex->gid) < 0 || setuid (ex->uid) < 0))
        _exit (126);
      if (chdir (dir) < 0 && chdir ("/") < 0)
        _exit (126);
      execv (python, argv);
      _exit (127);
    }
  close (req[0]);
  close (rep[1]);
  py->pid = pid;
  py->to_fd = req[1];
  py->from_fd = rep[0];
  free (py->python);
  py->python = xstrdup (python);
  return 0;
}

/* Reads one framed reply; -1 on timeout (errno ETIMEDOUT) or failure. */
static json_t *
read_reply (struct ipython *py, double deadline)
{
  struct ohbox_buf b = { 0 };
  size_t need = 0;
  char *hdr_end = NULL;
  for (;;)
    {
      if (hdr_end == NULL && b.len)
        {
          hdr_end = memchr (b.data, '\n', b.len);
          if (hdr_end)
            {
              need = strtoul (b.data, NULL, 10);
              if (need > MAX_REPLY)
                break;
            }
        }
      if (hdr_end && b.len - (size_t) (hdr_end + 1 - b.data) >= need)
        {
          json_t *j = json_loadb (hdr_end + 1, need, 0, NULL);
          free (b.data);
          return j;
        }
      double left = deadline - now_mono ();
      if (left <= 0)
        {
          errno = ETIMEDOUT;
          break;
        }
      struct pollfd p = { .fd = py->from_fd, .events = POLLIN };
      int r = poll (&p, 1, (int) (left * 1000) + 1);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        continue;
      char chunk[65536];
      ssize_t n = read (py->from_fd, chunk, sizeof (chunk));
      if (n <= 0)
        {
          errno = EPIPE;
          break;
        }
      if (b.len + (size_t) n > MAX_REPLY + 32)
        break;
      ohbox_buf_append (&b, chunk, (size_t) n);
      if (hdr_end == NULL)
        continue;
      hdr_end = memchr (b.data, '\n', b.len); /* the buffer may have moved */
    }
  free (b.data);
  return NULL;
}

static json_t *
obs_ipython (const char *content, const char *code)
{
  json_t *o = json_object ();
  json_object_set_new (o, "message", json_string ("Code executed in IPython cell."));
  json_object_set_new (o, "observation", json_string ("run_ipython"));
  json_object_set_new (o, "content", json_str_lossy (content, strlen (content)));
  json_t *extras = json_object ();
  json_object_set_new (extras, "code", json_str_lossy (code, strlen (code)));
  json_object_set_new (extras, "image_urls", json_null ());
  json_object_set_new (o, "extras", extras);
  json_object_set_new (o, "success", json_true ());
  return o;
}

json_t *
action_run_ipython (struct executor *ex, json_t *args, double timeout)
{
  json_t *jcode = json_object_get (args, "code");
  if (!json_is_string (jcode))
    return obs_error ("Missing required argument `code` (a string) for action `run_ipython`.");
  const char *code = json_string_value (jcode);
  json_t *extra = json_object_get (args, "include_extra");
  bool include_extra = !json_is_boolean (extra) || json_is_true (extra);

  if (ex->ipython == NULL)
    {
      ex->ipython = xcalloc (1, sizeof (struct ipython));
      ex->ipython->pid = -1;
      ex->ipython->to_fd = ex->ipython->from_fd = -1;
    }
  struct ipython *py = ex->ipython;
  if (py->pid > 0 && waitpid (py->pid, NULL, WNOHANG) == py->pid)
    {
      py->pid = -1;
      ipython_stop (py);
    }
  if (py->pid <= 0)
    {
      cleanup_free char *why = NULL;
      if (ipython_start (ex, py, &why) < 0)
        return obs_error (why);
    }

  /* Follow the bash session's cwd, as the server does before each cell. */
  cleanup_free char *cwd = ex->bash ? bash_session_cwd (ex->bash) : xstrdup (ex->work_dir);
  json_t *req = json_pack ("{s:s, s:s?}", "code", code, "cwd",
                           py->synced_cwd && strcmp (py->synced_cwd, cwd) == 0 ? NULL : cwd);
  cleanup_free char *body = json_dumps (req, JSON_COMPACT);
  json_decref (req);
  cleanup_free char *frame = xasprintf ("%zu\n%s", strlen (body), body);
  if (ohbox_write_all (py->to_fd, frame, strlen (frame)) < 0)
    {
      ipython_stop (py);
      return obs_errorf ("The Python interpreter exited; it is restarted on the next cell.");
    }
  free (py->synced_cwd);
  py->synced_cwd = xstrdup (cwd);

  double limit = timeout > 0 ? timeout : DEFAULT_CELL_TIMEOUT;
  json_t *reply = read_reply (py, now_mono () + limit);
  cleanup_free char *content = NULL;
  if (reply == NULL && errno == ETIMEDOUT)
    {
      /* Interrupt the cell (KeyboardInterrupt); its output still comes back. */
      kill (py->pid, SIGINT);
      reply = read_reply (py, now_mono () + 5);
      cleanup_free char *secs = py_float_repr (limit);
      const char *out = reply ? json_string_value (json_object_get (reply, "output")) : NULL;
      content = xasprintf ("%s%s[Execution timed out (%s seconds).]", out ? out : "", out && *out ? "\n" : "", secs);
      if (reply == NULL)
        ipython_stop (py);
    }
  else if (reply == NULL)
    {
      ipython_stop (py);
      content = xstrdup ("[The Python interpreter exited; it is restarted on the next cell.]");
    }
  else
    {
      const char *out = json_string_value (json_object_get (reply, "output"));
      content = xstrdup (out && *out ? out : "[Code executed successfully with no output]");
    }
  json_decref (reply);
  size_t cl = strlen (content);
  while (cl && strchr (" \t\n\r", content[cl - 1]))
    content[--cl] = '\0';
  if (include_extra)
    {
      char *c2 = xasprintf ("%s\n[Jupyter current working directory: %s]\n[Jupyter Python interpreter: %s]", content,
                            cwd, py->python ? py->python : "");
      free (content);
      content = c2;
    }
  return obs_ipython (content, code);
}
