"""`python -m tools.smoke`."""

from tools.smoke.run import main

raise SystemExit(main())
