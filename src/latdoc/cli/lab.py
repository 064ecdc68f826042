"""``latdoc lab``: the lab's own command line (:mod:`latdoc.lab.command`) under ``latdoc``.

The lab parses and runs its commands itself; ``latdoc`` only adds them, with its
own parser class, once the ``[lab]`` extra is known to be installed (``_lab_extra``).
"""

from __future__ import annotations

from latdoc.lab.command import add_parser as add_lab_parser
from latdoc.lab.command import config_from_args
from latdoc.lab.command import run as run_lab

__all__ = ["add_lab_parser", "config_from_args", "run_lab"]
