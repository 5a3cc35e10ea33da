"""tests/executor/pytests.py: what the executor's Python test programs
(client.py, flood.py, zip_attack.py) share: their exceptions and the loop
that runs the tests of the groups asked for, printing a PASS:, FAIL: or
SKIP: line per test as tests/run-tests.sh counts them."""

import traceback


class Fail(Exception):
    pass


class Skip(Exception):
    pass


def run(prog, groups, tests, after_each=None, only=''):
    """Runs TESTS[g] for each g of GROUPS (functions named test_NAME, shown
    as PROG/NAME; with ONLY, those whose name contains it), AFTER_EACH after
    each one; the exit status."""
    failed = 0
    for g in groups:
        for fn in tests[g]:
            name = f'{prog}/{fn.__name__[5:]}'
            if only and only not in name:
                continue
            try:
                fn()
                print(f'PASS: {name}', flush=True)
            except Skip as e:
                print(f'SKIP: {name}: {e}', flush=True)
            except Fail as e:
                failed += 1
                print(f'FAIL: {name}: {e}', flush=True)
            except Exception:
                failed += 1
                print(f'FAIL: {name}: {traceback.format_exc().strip().splitlines()[-1]}', flush=True)
                traceback.print_exc()
            if after_each:
                after_each()
    return 1 if failed else 0
