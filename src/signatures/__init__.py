"""Signatures of parking services and bot walls, as data (parking.toml, walls.toml), each entry
with its source; read by adapters/files/site_signatures.py."""
