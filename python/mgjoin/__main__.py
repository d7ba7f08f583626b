"""python -m mgjoin ARGS: the `mgjoin` command-line tool that ships inside the package, with every
subcommand (join, generate, bench, topo, tune) and option of the CLI built from the same sources."""
from __future__ import annotations

import sys


def main() -> None:
    from ._machine import run_cli

    try:
        run_cli(sys.argv[1:])
    except RuntimeError as e:  # the package was built without the CLI
        sys.stderr.write(f"mgjoin: error: {e}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
