"""Reading the web within limits: bounded bodies, the address policy, redirects, Retry-After."""
