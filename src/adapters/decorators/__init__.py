"""Port decorators: retries, the rate budget and Prometheus metrics around any adapter."""
