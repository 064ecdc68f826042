"""``latdoc providers``: the ``--provider`` presets, each with its dialects, base URL, key
variables and whether each is set here (never a key itself). Sends nothing."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, TextIO

from latdoc.cli._options import EXIT_OK, add_json_argument
from latdoc.probe.providers import PROVIDERS
from latdoc.report import make_console, providers_to_dict, render_providers


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "providers",
        help="the --provider presets: API, base URL, key variable, whether it is set",
        description="List the presets --provider NAME picks from: the API dialect each "
        "speaks (and the others it serves), its base URL, the environment variables its "
        "key is read from and the header it goes in, and whether each variable is set "
        "here. A key's value is never shown. Sends nothing.",
    )
    add_json_argument(p, "print the presets as JSON")


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    if args.json:
        out.write(json.dumps(providers_to_dict(PROVIDERS, os.environ), indent=2) + "\n")
    else:
        make_console(out).print(render_providers(PROVIDERS, os.environ))
    return EXIT_OK
