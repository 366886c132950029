"""The LLM port spoken through litellm: endpoints, credentials, output formats, failures, transport."""
