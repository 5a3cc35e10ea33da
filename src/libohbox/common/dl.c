/* dl.c: the loader behind dl_curl.c, dl_archive.c and dl_nft.c (dl.h). */
#include "config.h"

#include <dlfcn.h>
#include <string.h>

#include "common/dl.h"
#include "common/utils.h"

void
ohbox_dl_open_many (struct ohbox_dl_library *lib)
{
  /* RTLD_LOCAL: the library's symbols stay out of the global scope, so
   * nothing else in the process binds to them by accident.  RTLD_NOW: a
   * missing symbol in its dependencies fails here, not mid-transfer. */
  void *h = dlopen (lib->soname, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL)
    {
      const char *e = dlerror ();
      lib->error = xasprintf ("cannot load `%s`, needed for %s (%s): install it (Debian: apt-get install %s)",
                              lib->soname, lib->needed_for, e ? e : "not found", lib->package);
      return;
    }
  for (size_t i = 0; i < lib->n_symbols; i++)
    {
      /* POSIX guarantees a dlsym result converts to a function pointer;
       * the table is a struct of function pointers, laid out as an array
       * of pointers (checked by the static assertions next to each). */
      void *sym = dlsym (h, lib->symbols[i]);
      if (sym == NULL)
        {
          lib->error = xasprintf ("`%s` has no symbol `%s` (needed for %s): it is older than the version ohbox "
                                  "was built against; upgrade %s",
                                  lib->soname, lib->symbols[i], lib->needed_for, lib->package);
          memset (lib->slots, 0, lib->n_symbols * sizeof (void *));
          dlclose (h);
          return;
        }
      lib->slots[i] = sym;
    }
  /* Loaded for the rest of the process: never dlclose'd, the pointers stay
   * valid. */
}

int
ohbox_dl_load (struct ohbox_dl_library *lib, ohbox_error_t *err)
{
  pthread_once (&lib->once, lib->init);
  if (lib->error == NULL)
    return 0;
  return ohbox_error (err, OHBOX_ERR_GENERIC, 0, "%s", lib->error);
}
