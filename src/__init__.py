"""firmsift: classify companies by their web domain."""
