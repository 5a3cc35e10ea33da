"""tests/lib/testhttp.py: what the suite's small HTTP servers share
(fault_proxy.py, token_server.py, static_registry.py).

They bind port 0 (or the port given) and tell the shell which port they got
through a file written atomically: the test waits for the file, never for a
port it guessed.
"""

import os


def write_port_file(path, port):
    """PATH holds PORT and a newline once it exists (renamed into place)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.rename(tmp, path)


def serve(srv, port_file=None):
    """Announces SRV's port in PORT_FILE (when given) and serves until
    interrupted; returns the exit status for main()."""
    if port_file:
        write_port_file(port_file, srv.server_address[1])
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0
