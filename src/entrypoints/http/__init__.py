"""The HTTP API (starlette): routes, authentication, limits, errors and the OpenAPI document."""
