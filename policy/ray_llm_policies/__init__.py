"""The ray-llm-eks policy pack (`pack.py`) and its standard-library rules (`internet.py`, `aws_rules.py`,
`pinning.py`), which the program's own settings import too (infra/settings/): one home for each rule the pack and the
program share. This module imports nothing, so that importing a rule does not need the pack's SDK.
"""
