"""``python -m offload.cli``: the ``offload`` command."""

import sys

from . import main

sys.exit(main())
