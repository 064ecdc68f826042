"""``latdoc providers``: the ``--provider`` presets, each with its dialects, base URL, key
variables and whether each is set here (never a key itself), and its quirks. Sends
nothing."""

from __future__ import annotations

import argparse
import os
from typing import Any

from latdoc.cli._options import EXIT_OK, add_json_argument
from latdoc.cli._output import emit
from latdoc.probe.providers import PROVIDERS
from latdoc.report import ShownProviders


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "providers",
        help="the --provider presets: API, base URL, key variable, whether it is set, quirks",
        description="List the presets --provider NAME picks from: the API dialect each "
        "speaks (and the others it serves), its base URL, the environment variables its "
        "key is read from and the header it goes in, whether each variable is set here, "
        "and what its chat API does its own way (where its usage counts cached and "
        "reasoning tokens, the switch that turns its thinking off). A key's value is "
        "never shown. Sends nothing.",
    )
    add_json_argument(p, "print the presets as JSON")


def run(args: argparse.Namespace) -> int:
    emit(ShownProviders(PROVIDERS, os.environ), args)
    return EXIT_OK
