from lab.kv_offload_gpu.cli import main

raise SystemExit(main())
