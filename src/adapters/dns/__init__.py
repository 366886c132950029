"""DNS through dnspython: the pre-check resolver (addresses, CNAME chain, zone NS)."""
