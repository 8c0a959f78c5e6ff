from lab.prefix_cache_gpu.cli import main

raise SystemExit(main())
