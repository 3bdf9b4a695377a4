"""Writes that stay inside the registry: temp file, fsync, rename, the lock, the tree listing."""
