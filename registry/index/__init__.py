"""The registry's records: the layout grammar, SHA256SUMS, lineage, sampling presets, architectures, README."""
