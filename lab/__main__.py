"""`python -m lab CMD` (what `bin/pcgkit lab CMD` runs): the workshop's commands through pcgkit's one error path."""

import sys

from lab.cli import main

sys.exit(main())
