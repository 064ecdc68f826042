"""``python -m latdoc``: the same as the ``latdoc`` command."""

import sys

from latdoc.cli import main

sys.exit(main())
