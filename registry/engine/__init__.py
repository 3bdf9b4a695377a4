"""The validation run: walks a tree once, gathers facts through the cache, applies every rule, reports."""
