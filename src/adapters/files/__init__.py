"""Files as adapters: classifier definitions, the completion cache and evidence snapshots (JSONL)."""
