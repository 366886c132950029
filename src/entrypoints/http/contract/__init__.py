"""The HTTP contract's JSON bodies as pydantic models: they check requests and are /openapi.json's schemas."""
