"""The composition root: every container, provider and lazy factory of firmsift, and the only
package outside src/adapters that names a concrete adapter."""
