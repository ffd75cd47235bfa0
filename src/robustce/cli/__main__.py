"""``python -m robustce.cli``: the ``robustce`` command."""

import sys

from robustce.cli import main

sys.exit(main())
