from tools.kv_offload_gpu.cli import main

raise SystemExit(main())
