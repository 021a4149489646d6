"""``python -m aicr_gen``."""

import sys

from aicr_gen.cli import main

sys.exit(main())
