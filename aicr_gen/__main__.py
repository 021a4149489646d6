"""``python -m aicr_gen``."""

import sys

from aicr_gen.cli.main import main

sys.exit(main())
