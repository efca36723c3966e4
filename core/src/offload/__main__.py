"""``python -m offload``: the ``offload`` command."""

import sys

from .cli import main

sys.exit(main())
