"""`python -m lab.smoke`."""

from lab.smoke.run import main

raise SystemExit(main())
